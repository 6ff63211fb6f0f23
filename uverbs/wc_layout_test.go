package uverbs

import (
	"reflect"
	"testing"

	"github.com/goverbs/rdma/uverbs/internal/mlx5"
	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// Poll decodes straight into []WC: every field must have the offset, size
// and kind of the providers' rxe.WC and mlx5.WC fields at the same
// position.
func TestWCLayout(t *testing.T) {
	a := reflect.TypeFor[WC]()
	for _, b := range []reflect.Type{reflect.TypeFor[rxe.WC](), reflect.TypeFor[mlx5.WC]()} {
		if a.Size() != b.Size() || a.NumField() != b.NumField() {
			t.Fatalf("WC is %d bytes with %d fields, %v %d bytes with %d", a.Size(), a.NumField(), b, b.Size(), b.NumField())
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			if fa.Offset != fb.Offset || fa.Type.Size() != fb.Type.Size() || fa.Type.Kind() != fb.Type.Kind() {
				t.Errorf("field %d: WC.%s at %d (%v), %v.%s at %d (%v)", i, fa.Name, fa.Offset, fa.Type, b, fb.Name, fb.Offset, fb.Type)
			}
		}
	}
}
