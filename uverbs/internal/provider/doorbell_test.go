package provider

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
)

// Each QP's doorbell is a POST_SEND for its own handle in a slot of its
// own, whose response pointer points inside that slot; 64 slots share a
// page, the 65th maps a second one.
func TestDoorbellsSlots(t *testing.T) {
	var d Doorbells
	defer d.Close()
	seen := map[uintptr]bool{}
	var dbs []*PostSend
	for h := range uint32(doorbellSlots + 1) {
		db, err := d.New(h, "test doorbells")
		if err != nil {
			t.Fatal(err)
		}
		a := uintptr(unsafe.Pointer(db))
		if seen[a] || a%doorbellSlot != 0 {
			t.Fatalf("doorbell %d at %#x: reused or not at a slot's start", h, a)
		}
		seen[a] = true
		if db.Command() != abi.IB_USER_VERBS_CMD_POST_SEND || db.QPHandle() != h ||
			db.cmd.Response != uint64(uintptr(unsafe.Pointer(&db.resp))) || db.cmd.WRCount != 0 {
			t.Fatalf("doorbell %d is %+v", h, *db)
		}
		if end := uintptr(unsafe.Pointer(&db.resp)) + unsafe.Sizeof(db.resp); end > a+doorbellSlot {
			t.Fatalf("doorbell %d's response ends past its slot", h)
		}
		dbs = append(dbs, db)
	}
	if slots, pages := d.InUse(); slots != doorbellSlots+1 || pages != 2 {
		t.Fatalf("%d slots in %d pages, want %d in 2", slots, pages, doorbellSlots+1)
	}

	// A freed slot is the next one taken, built for its new handle.
	d.Free(dbs[5])
	db, err := d.New(1000, "test doorbells")
	if err != nil {
		t.Fatal(err)
	}
	if db != dbs[5] || db.QPHandle() != 1000 {
		t.Fatalf("got the slot at %p for handle %d, want the freed one at %p for 1000", db, db.QPHandle(), dbs[5])
	}

	// A page that empties is unmapped.
	d.Free(dbs[doorbellSlots])
	if _, pages := d.InUse(); pages != 1 {
		t.Fatalf("%d pages after the second emptied, want 1", pages)
	}
	d.Free(db)
	for _, db := range dbs[:doorbellSlots] {
		d.Free(db)
	}
	d.Free(nil)
	if slots, pages := d.InUse(); slots != 0 || pages != 0 {
		t.Fatalf("%d slots in %d pages after freeing all, want none", slots, pages)
	}

	// Close unmaps the pages of slots never freed.
	if _, err := d.New(1, "test doorbells"); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if slots, pages := d.InUse(); slots != 0 || pages != 0 {
		t.Fatalf("%d slots in %d pages after Close, want none", slots, pages)
	}
	if _, err := d.New(1, "test doorbells"); !errors.Is(err, ErrDoorbellsClosed) {
		t.Fatalf("New after Close: %v, want ErrDoorbellsClosed", err)
	}
}
