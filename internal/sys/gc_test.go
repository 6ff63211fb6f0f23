package sys

import "runtime"

func runtimeGC() { runtime.GC() }
