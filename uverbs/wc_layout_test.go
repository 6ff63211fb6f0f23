package uverbs

import (
	"reflect"
	"testing"

	"github.com/goverbs/rdma/uverbs/internal/mlx5"
	"github.com/goverbs/rdma/uverbs/internal/provider"
	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// Poll decodes straight into []WC: every field must have the offset, size
// and kind of the providers' rxe.WC and mlx5.WC fields at the same
// position.
func TestWCLayout(t *testing.T) {
	sameLayout(t, reflect.TypeFor[WC](), reflect.TypeFor[rxe.WC]())
	sameLayout(t, reflect.TypeFor[WC](), reflect.TypeFor[mlx5.WC]())
}

// The providers take send lists as they are: provider.go views a []SendWR
// as a []provider.SendWR (sendWRs), which rxe's encoder reads and mlx5's
// views as its own (mlx5.SendWRs); receive lists and SGEs are the
// provider's types.
func TestWRLayout(t *testing.T) {
	sameLayout(t, reflect.TypeFor[SendWR](), reflect.TypeFor[provider.SendWR]())
	sameLayout(t, reflect.TypeFor[SendWR](), reflect.TypeFor[mlx5.SendWR]())
	sameLayout(t, reflect.TypeFor[SendWR](), reflect.TypeFor[rxe.SendWQE]())
	sameLayout(t, reflect.TypeFor[RecvWR](), reflect.TypeFor[mlx5.RecvWR]())
	sameLayout(t, reflect.TypeFor[SGE](), reflect.TypeFor[mlx5.SGE]())
}

func sameLayout(t *testing.T, a, b reflect.Type) {
	t.Helper()
	if a.Size() != b.Size() || a.NumField() != b.NumField() {
		t.Fatalf("%v is %d bytes with %d fields, %v %d bytes with %d", a, a.Size(), a.NumField(), b, b.Size(), b.NumField())
	}
	for i := range a.NumField() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Offset != fb.Offset || fa.Type.Size() != fb.Type.Size() || kind(fa.Type) != kind(fb.Type) {
			t.Errorf("field %d: %v.%s at %d (%v), %v.%s at %d (%v)", i, a, fa.Name, fa.Offset, fa.Type, b, fb.Name, fb.Offset, fb.Type)
		}
	}
}

// kind is t's kind, with unsafe.Pointer counted as a pointer.
func kind(t reflect.Type) reflect.Kind {
	if t.Kind() == reflect.UnsafePointer {
		return reflect.Pointer
	}
	return t.Kind()
}
