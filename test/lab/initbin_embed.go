//go:build linux && labinit

package lab

import _ "embed"

// The guest /init of each architecture, built by make dist.
var (
	//go:embed initbin/init-amd64
	initAMD64 []byte
	//go:embed initbin/init-arm64
	initARM64 []byte
)

func init() {
	prebuiltInits = map[string][]byte{ArchAMD64: initAMD64, ArchARM64: initARM64}
}
