package uverbs

import (
	"reflect"
	"testing"

	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// Poll decodes straight into []WC: every field must have the offset, size
// and kind of the provider's rxe.WC field at the same position.
func TestWCLayout(t *testing.T) {
	a, b := reflect.TypeFor[WC](), reflect.TypeFor[rxe.WC]()
	if a.Size() != b.Size() || a.NumField() != b.NumField() {
		t.Fatalf("WC is %d bytes with %d fields, rxe.WC %d bytes with %d", a.Size(), a.NumField(), b.Size(), b.NumField())
	}
	for i := range a.NumField() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Offset != fb.Offset || fa.Type.Size() != fb.Type.Size() || fa.Type.Kind() != fb.Type.Kind() {
			t.Errorf("field %d: WC.%s at %d (%v), rxe.WC.%s at %d (%v)", i, fa.Name, fa.Offset, fa.Type, fb.Name, fb.Offset, fb.Type)
		}
	}
}
