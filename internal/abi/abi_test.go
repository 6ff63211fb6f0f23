//go:build amd64 || arm64

package abi

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi/internal/names"
	"github.com/goverbs/rdma/internal/abi/internal/stamp"
)

// factsFile is our copy of the offsetof/sizeof dump of the UAPI headers.
const factsFile = "testdata/abi-offsets-x86_64.txt"

// handOffsets and handConsts hold the hand-written (not generated) offset
// constants and constants, so that facts about them are checked the same way.
var handOffsets = map[string]uintptr{
	"RxeSendWROffWRFlush":           RxeSendWROffWRFlush,
	"RxeSendWROffWRFlushRemoteAddr": RxeSendWROffWRFlushRemoteAddr,
	"RxeSendWROffWRFlushLength":     RxeSendWROffWRFlushLength,
	"RxeSendWROffWRFlushRKey":       RxeSendWROffWRFlushRKey,
	"RxeSendWROffWRFlushType":       RxeSendWROffWRFlushType,
	"RxeSendWROffWRFlushLevel":      RxeSendWROffWRFlushLevel,
	"RxeDMAInfoOffAtomicWR":         RxeDMAInfoOffAtomicWR,
	"RxeSendWQEOffDMAAtomicWR":      RxeSendWQEOffDMAAtomicWR,
}

var handConsts = map[string]int64{
	"IB_UVERBS_WR_FLUSH":                IB_UVERBS_WR_FLUSH,
	"IB_UVERBS_WR_ATOMIC_WRITE":         IB_UVERBS_WR_ATOMIC_WRITE,
	"IB_UVERBS_WC_FLUSH":                IB_UVERBS_WC_FLUSH,
	"IB_UVERBS_WC_ATOMIC_WRITE":         IB_UVERBS_WC_ATOMIC_WRITE,
	"IB_UVERBS_ACCESS_FLUSH_GLOBAL":     IB_UVERBS_ACCESS_FLUSH_GLOBAL,
	"IB_UVERBS_ACCESS_FLUSH_PERSISTENT": IB_UVERBS_ACCESS_FLUSH_PERSISTENT,
	"IB_UVERBS_DEVICE_FLUSH_GLOBAL":     IB_UVERBS_DEVICE_FLUSH_GLOBAL,
	"IB_UVERBS_DEVICE_FLUSH_PERSISTENT": IB_UVERBS_DEVICE_FLUSH_PERSISTENT,
	"IB_UVERBS_DEVICE_ATOMIC_WRITE":     IB_UVERBS_DEVICE_ATOMIC_WRITE,
	"RXE_UVERBS_ABI_VERSION":            RXE_UVERBS_ABI_VERSION,
}

func lookupOffset(name string) (uintptr, bool) {
	if v, ok := generatedOffsets[name]; ok {
		return v, true
	}
	v, ok := handOffsets[name]
	return v, ok
}

func lookupConst(name string) (int64, bool) {
	if v, ok := generatedConsts[name]; ok {
		return v, true
	}
	v, ok := handConsts[name]
	return v, ok
}

type fieldFact struct {
	path string
	off  uintptr
	line int
}

type structFact struct {
	name   string
	size   uintptr
	line   int
	fields []fieldFact
}

type valueFact struct {
	name  string
	value int64
	line  int
}

type nlTypeFact struct {
	client, op string
	value      int64
	line       int
}

type facts struct {
	structs []*structFact
	sizes   []valueFact // "sockaddr_in=16": C type sizes
	consts  []valueFact
	nlTypes []nlTypeFact
}

var (
	structLine = regexp.MustCompile(`^(\w+)\s+size=(\d+)$`)
	fieldLine  = regexp.MustCompile(`^\s+([\w.]+)\s+off=(\d+)$`)
	nlTypeLine = regexp.MustCompile(`^RDMA_NL_GET_TYPE\((\w+),\s*(\w+)\)\s*=\s*(\d+)`)
	groupLine  = regexp.MustCompile(`^(\w+):\s+(.*)$`)
	hexComment = regexp.MustCompile(`\(0x[0-9a-fA-F]+\)`)
	assignment = regexp.MustCompile(`([A-Za-z_]\w*)\s*=\s*(0x[0-9a-fA-F]+|-?\d+)`)
)

// readFacts parses factsFile. Every non-comment line must be understood.
func readFacts(t *testing.T) *facts {
	t.Helper()
	f, err := os.Open(factsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs := &facts{}
	var cur *structFact
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if m := structLine.FindStringSubmatch(line); m != nil {
			cur = &structFact{name: m[1], size: atou(t, m[2]), line: n}
			fs.structs = append(fs.structs, cur)
			continue
		}
		if m := fieldLine.FindStringSubmatch(line); m != nil {
			if cur == nil {
				t.Fatalf("%s:%d: member offset outside a struct", factsFile, n)
			}
			cur.fields = append(cur.fields, fieldFact{path: m[1], off: atou(t, m[2]), line: n})
			continue
		}
		cur = nil
		if m := nlTypeLine.FindStringSubmatch(line); m != nil {
			fs.nlTypes = append(fs.nlTypes, nlTypeFact{client: m[1], op: m[2], value: atoi(t, m[3]), line: n})
			continue
		}
		prefix := ""
		if m := groupLine.FindStringSubmatch(line); m != nil {
			prefix, line = m[1]+"_", m[2]
		}
		as := assignment.FindAllStringSubmatch(hexComment.ReplaceAllString(line, ""), -1)
		if len(as) == 0 {
			t.Fatalf("%s:%d: cannot parse %q", factsFile, n, line)
		}
		for _, a := range as {
			v := valueFact{name: prefix + a[1], value: atoi(t, a[2]), line: n}
			if strings.ToUpper(a[1]) == a[1] {
				fs.consts = append(fs.consts, v)
			} else {
				fs.sizes = append(fs.sizes, v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return fs
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func atou(t *testing.T, s string) uintptr {
	t.Helper()
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	return uintptr(v)
}

// memberOffset returns the offset of the member at the dotted C path in the
// C struct cStruct: through Go fields while they exist, else from the
// generated offset constant for the path.
func memberOffset(typ reflect.Type, cStruct, path string) (uintptr, string, error) {
	t, off := typ, uintptr(0)
	parts := strings.Split(path, ".")
	for i, p := range parts {
		f, ok := t.FieldByName(names.Field(p))
		if !ok || (i < len(parts)-1 && f.Type.Kind() != reflect.Struct) {
			break
		}
		off += f.Offset
		t = f.Type
		if i == len(parts)-1 {
			return off, "field", nil
		}
	}
	name := names.Offset(cStruct, path)
	if v, ok := lookupOffset(name); ok {
		return v, "constant " + name, nil
	}
	return 0, "", fmt.Errorf("no Go field for it and no offset constant %s", name)
}

// TestLayout checks every struct size, member offset, type size and constant
// in factsFile against package abi.
func TestLayout(t *testing.T) {
	fs := readFacts(t)
	if len(fs.structs) < 100 || len(fs.consts) < 50 {
		t.Fatalf("%s: only %d structs and %d constants parsed", factsFile, len(fs.structs), len(fs.consts))
	}
	checked := 0
	for _, s := range fs.structs {
		typ, ok := generatedTypes[s.name]
		if !ok {
			t.Errorf("%s:%d: struct %s has no Go type (want %s)", factsFile, s.line, s.name, names.Type(s.name))
			continue
		}
		if got := typ.Size(); got != s.size {
			t.Errorf("%s:%d: sizeof(struct %s) = %d, Go %s is %d bytes", factsFile, s.line, s.name, s.size, typ.Name(), got)
		}
		checked++
		for _, f := range s.fields {
			got, how, err := memberOffset(typ, s.name, f.path)
			if err != nil {
				t.Errorf("%s:%d: struct %s member %s: %v", factsFile, f.line, s.name, f.path, err)
				continue
			}
			if got != f.off {
				t.Errorf("%s:%d: offsetof(struct %s, %s) = %d, Go (%s) gives %d", factsFile, f.line, s.name, f.path, f.off, how, got)
			}
			checked++
		}
	}
	for _, sz := range fs.sizes {
		typ, ok := generatedTypes[sz.name]
		if !ok {
			t.Errorf("%s:%d: type %s has no Go type", factsFile, sz.line, sz.name)
			continue
		}
		if int64(typ.Size()) != sz.value {
			t.Errorf("%s:%d: sizeof(%s) = %d, Go %s is %d bytes", factsFile, sz.line, sz.name, sz.value, typ.Name(), typ.Size())
		}
		checked++
	}
	for _, c := range fs.consts {
		v, ok := lookupConst(c.name)
		if !ok {
			t.Errorf("%s:%d: constant %s is not in package abi", factsFile, c.line, c.name)
			continue
		}
		if v != c.value {
			t.Errorf("%s:%d: %s = %d (%#x), package abi has %d (%#x)", factsFile, c.line, c.name, c.value, c.value, v, v)
		}
		checked++
	}
	for _, nt := range fs.nlTypes {
		client, ok1 := lookupConst(nt.client)
		op, ok2 := lookupConst(nt.op)
		if !ok1 || !ok2 {
			t.Errorf("%s:%d: %s or %s is not in package abi", factsFile, nt.line, nt.client, nt.op)
			continue
		}
		typ := RDMA_NL_GET_TYPE(uint16(client), uint16(op))
		if int64(typ) != nt.value {
			t.Errorf("%s:%d: RDMA_NL_GET_TYPE(%s, %s) = %d, Go gives %d", factsFile, nt.line, nt.client, nt.op, nt.value, typ)
		}
		if int64(RDMA_NL_GET_CLIENT(typ)) != client || int64(RDMA_NL_GET_OP(typ)) != op {
			t.Errorf("RDMA_NL_GET_CLIENT/GET_OP(%#x) = %d/%d, want %d/%d", typ, RDMA_NL_GET_CLIENT(typ), RDMA_NL_GET_OP(typ), client, op)
		}
		checked++
	}
	t.Logf("checked %d facts from %s", checked, factsFile)
}

// TestNLGetTypeMatchesMacro compares the Go RDMA_NL_GET_TYPE with the C macro
// as evaluated at generation time.
func TestNLGetTypeMatchesMacro(t *testing.T) {
	if got := RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET); got != rdmaNLGetTypeNLDEVGet {
		t.Errorf("RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET) = %#x, C macro gives %#x", got, rdmaNLGetTypeNLDEVGet)
	}
}

// TestReferenceConstants checks generated constants against values written
// down by hand from the kernel's UAPI headers (include/uapi/rdma/
// ib_user_verbs.h, rdma_user_ioctl_cmds.h, ib_user_ioctl_cmds.h,
// ib_user_ioctl_verbs.h, rdma_user_rxe.h, rdma_user_cm.h, rdma_netlink.h;
// the CM event numbers from the kernel's include/rdma/rdma_cm.h enum
// rdma_cm_event_type) and checked on real rxe devices.
func TestReferenceConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"RDMA_VERBS_IOCTL", RDMA_VERBS_IOCTL, 0xc0181b01},
		{"IB_USER_VERBS_ABI_VERSION", IB_USER_VERBS_ABI_VERSION, 6},
		{"IB_USER_VERBS_CMD_FLAG_EXTENDED", IB_USER_VERBS_CMD_FLAG_EXTENDED, 0x80000000},
		{"IB_USER_VERBS_CMD_COMMAND_MASK", IB_USER_VERBS_CMD_COMMAND_MASK, 0xff},
		{"IB_USER_VERBS_CMD_GET_CONTEXT", IB_USER_VERBS_CMD_GET_CONTEXT, 0},
		{"IB_USER_VERBS_CMD_REG_MR", IB_USER_VERBS_CMD_REG_MR, 9},
		{"IB_USER_VERBS_CMD_CREATE_CQ", IB_USER_VERBS_CMD_CREATE_CQ, 18},
		{"IB_USER_VERBS_CMD_CREATE_QP", IB_USER_VERBS_CMD_CREATE_QP, 24},
		{"IB_USER_VERBS_CMD_MODIFY_QP", IB_USER_VERBS_CMD_MODIFY_QP, 26},
		{"IB_USER_VERBS_CMD_POST_SEND", IB_USER_VERBS_CMD_POST_SEND, 28},
		{"IB_USER_VERBS_CMD_CREATE_XSRQ", IB_USER_VERBS_CMD_CREATE_XSRQ, 39},
		{"IB_USER_VERBS_EX_CMD_QUERY_DEVICE", IB_USER_VERBS_EX_CMD_QUERY_DEVICE, 1},
		{"IB_USER_VERBS_EX_CMD_CREATE_CQ", IB_USER_VERBS_EX_CMD_CREATE_CQ, 18},
		{"IB_USER_VERBS_EX_CMD_CREATE_QP", IB_USER_VERBS_EX_CMD_CREATE_QP, 24},
		{"IB_USER_VERBS_EX_CMD_MODIFY_QP", IB_USER_VERBS_EX_CMD_MODIFY_QP, 26},
		{"IB_USER_VERBS_EX_CMD_MODIFY_CQ", IB_USER_VERBS_EX_CMD_MODIFY_CQ, 57},
		{"RDMA_DRIVER_RXE", RDMA_DRIVER_RXE, 14},
		{"RDMA_DRIVER_SIW", RDMA_DRIVER_SIW, 18},
		{"RXE_UVERBS_ABI_VERSION", RXE_UVERBS_ABI_VERSION, 2},
		{"UVERBS_ATTR_UHW_IN", UVERBS_ATTR_UHW_IN, 0x1000},
		{"UVERBS_ATTR_UHW_OUT", UVERBS_ATTR_UHW_OUT, 0x1001},
		{"UVERBS_ATTR_F_MANDATORY", UVERBS_ATTR_F_MANDATORY, 1},
		{"UVERBS_ATTR_F_VALID_OUTPUT", UVERBS_ATTR_F_VALID_OUTPUT, 2},
		{"UVERBS_OBJECT_DEVICE", UVERBS_OBJECT_DEVICE, 0},
		{"UVERBS_OBJECT_CQ", UVERBS_OBJECT_CQ, 3},
		{"UVERBS_OBJECT_MR", UVERBS_OBJECT_MR, 7},
		{"UVERBS_OBJECT_ASYNC_EVENT", UVERBS_OBJECT_ASYNC_EVENT, 16},
		{"UVERBS_METHOD_INVOKE_WRITE", UVERBS_METHOD_INVOKE_WRITE, 0},
		{"UVERBS_METHOD_QUERY_GID_ENTRY", UVERBS_METHOD_QUERY_GID_ENTRY, 6},
		{"UVERBS_ATTR_WRITE_CMD", UVERBS_ATTR_WRITE_CMD, 2},
		{"UVERBS_ATTR_CREATE_CQ_RESP_CQE", UVERBS_ATTR_CREATE_CQ_RESP_CQE, 6},
		{"UVERBS_ATTR_CREATE_QP_CAP", UVERBS_ATTR_CREATE_QP_CAP, 8},
		{"UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY", UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, 3},
		{"IB_UVERBS_GID_TYPE_ROCE_V2", IB_UVERBS_GID_TYPE_ROCE_V2, 2},
		{"RDMA_USER_CM_ABI_VERSION", RDMA_USER_CM_ABI_VERSION, 4},
		{"RDMA_MAX_PRIVATE_DATA", RDMA_MAX_PRIVATE_DATA, 256},
		{"RDMA_USER_CM_CMD_GET_OPTION", RDMA_USER_CM_CMD_GET_OPTION, 13},
		{"RDMA_USER_CM_CMD_JOIN_MCAST", RDMA_USER_CM_CMD_JOIN_MCAST, 22},
		{"RDMA_PS_TCP", RDMA_PS_TCP, 0x0106},
		{"RDMA_PS_UDP", RDMA_PS_UDP, 0x0111},
		{"RDMA_PS_IB", RDMA_PS_IB, 0x013f},
		{"RDMA_PS_IPOIB", RDMA_PS_IPOIB, 0x0002},
		{"RDMA_USER_CM_QUERY_GID", RDMA_USER_CM_QUERY_GID, 2},
		{"RDMA_NODE_IB_CA", RDMA_NODE_IB_CA, 1},
		{"RDMA_CM_EVENT_ADDR_RESOLVED", RDMA_CM_EVENT_ADDR_RESOLVED, 0},
		{"RDMA_CM_EVENT_CONNECT_REQUEST", RDMA_CM_EVENT_CONNECT_REQUEST, 4},
		{"RDMA_CM_EVENT_REJECTED", RDMA_CM_EVENT_REJECTED, 8},
		{"RDMA_CM_EVENT_TIMEWAIT_EXIT", RDMA_CM_EVENT_TIMEWAIT_EXIT, 15},
		// Linux 6.2+ values (kernel: include/uapi/rdma/ib_user_verbs.h,
		// enum ib_uverbs_wr_opcode, ib_uverbs_wc_opcode, ib_uverbs_access_flags).
		{"IB_UVERBS_WR_FLUSH", IB_UVERBS_WR_FLUSH, 14},
		{"IB_UVERBS_WR_ATOMIC_WRITE", IB_UVERBS_WR_ATOMIC_WRITE, 15},
		{"IB_UVERBS_WC_FLUSH", IB_UVERBS_WC_FLUSH, 8},
		{"IB_UVERBS_WC_ATOMIC_WRITE", IB_UVERBS_WC_ATOMIC_WRITE, 9},
		{"IB_UVERBS_ACCESS_FLUSH_GLOBAL", IB_UVERBS_ACCESS_FLUSH_GLOBAL, 1 << 8},
		{"IB_UVERBS_ACCESS_FLUSH_PERSISTENT", IB_UVERBS_ACCESS_FLUSH_PERSISTENT, 1 << 9},
		{"IB_UVERBS_DEVICE_FLUSH_GLOBAL", IB_UVERBS_DEVICE_FLUSH_GLOBAL, 1 << 38},
		{"IB_UVERBS_DEVICE_FLUSH_PERSISTENT", IB_UVERBS_DEVICE_FLUSH_PERSISTENT, 1 << 39},
		{"IB_UVERBS_DEVICE_ATOMIC_WRITE", IB_UVERBS_DEVICE_ATOMIC_WRITE, 1 << 40},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	// The RDMA CM event types are consecutive from 0.
	events := []int64{RDMA_CM_EVENT_ADDR_RESOLVED, RDMA_CM_EVENT_ADDR_ERROR, RDMA_CM_EVENT_ROUTE_RESOLVED,
		RDMA_CM_EVENT_ROUTE_ERROR, RDMA_CM_EVENT_CONNECT_REQUEST, RDMA_CM_EVENT_CONNECT_RESPONSE,
		RDMA_CM_EVENT_CONNECT_ERROR, RDMA_CM_EVENT_UNREACHABLE, RDMA_CM_EVENT_REJECTED,
		RDMA_CM_EVENT_ESTABLISHED, RDMA_CM_EVENT_DISCONNECTED, RDMA_CM_EVENT_DEVICE_REMOVAL,
		RDMA_CM_EVENT_MULTICAST_JOIN, RDMA_CM_EVENT_MULTICAST_ERROR, RDMA_CM_EVENT_ADDR_CHANGE,
		RDMA_CM_EVENT_TIMEWAIT_EXIT}
	for i, e := range events {
		if e != int64(i) {
			t.Errorf("RDMA CM event %d has value %d", i, e)
		}
	}
}

// TestLaterUAPIDoesNotCollide checks that the hand-written 6.2+ values are
// not already used in the same C enum of the 6.1 headers.
func TestLaterUAPIDoesNotCollide(t *testing.T) {
	for _, c := range []struct {
		prefix string
		names  []string
	}{
		{"IB_UVERBS_WR_", []string{"IB_UVERBS_WR_FLUSH", "IB_UVERBS_WR_ATOMIC_WRITE"}},
		{"IB_UVERBS_WC_", []string{"IB_UVERBS_WC_FLUSH", "IB_UVERBS_WC_ATOMIC_WRITE"}},
		{"IB_UVERBS_ACCESS_", []string{"IB_UVERBS_ACCESS_FLUSH_GLOBAL", "IB_UVERBS_ACCESS_FLUSH_PERSISTENT"}},
		{"IB_UVERBS_DEVICE_", []string{"IB_UVERBS_DEVICE_FLUSH_GLOBAL", "IB_UVERBS_DEVICE_FLUSH_PERSISTENT", "IB_UVERBS_DEVICE_ATOMIC_WRITE"}},
	} {
		n := 0
		for gen, gv := range generatedConsts {
			if !strings.HasPrefix(gen, c.prefix) {
				continue
			}
			n++
			for _, name := range c.names {
				if _, dup := generatedConsts[name]; dup {
					t.Errorf("%s is generated too; drop it from linux_6_2.go", name)
				}
				if hv := handConsts[name]; hv == gv {
					t.Errorf("%s = %#x, the value of the 6.1 constant %s", name, hv, gen)
				}
			}
		}
		if n == 0 {
			t.Errorf("no generated constants start with %s", c.prefix)
		}
	}
}

// TestUnionVariants checks the Go types of union variants against the
// offset constants of their members, both computed from C.
func TestUnionVariants(t *testing.T) {
	for _, v := range []struct {
		typ     reflect.Type
		cStruct string
		path    string
		union   string // Go field holding the union bytes
	}{
		{reflect.TypeFor[RxeSendWRRDMA](), "rxe_send_wr", "wr.rdma", "WR"},
		{reflect.TypeFor[RxeSendWRAtomic](), "rxe_send_wr", "wr.atomic", "WR"},
		{reflect.TypeFor[RxeSendWRUD](), "rxe_send_wr", "wr.ud", "WR"},
		{reflect.TypeFor[RxeSendWRMW](), "rxe_send_wr", "wr.mw", "WR"},
		{reflect.TypeFor[RxeSendWRFlush](), "rxe_send_wr", "wr.flush", "WR"},
		{reflect.TypeFor[UverbsSendWRRDMA](), "ib_uverbs_send_wr", "wr.rdma", "WR"},
		{reflect.TypeFor[UverbsSendWRAtomic](), "ib_uverbs_send_wr", "wr.atomic", "WR"},
		{reflect.TypeFor[UverbsSendWRUD](), "ib_uverbs_send_wr", "wr.ud", "WR"},
		{reflect.TypeFor[UcmConnParam](), "rdma_ucm_event_resp", "param.conn", "Param"},
		{reflect.TypeFor[UcmUDParam](), "rdma_ucm_event_resp", "param.ud", "Param"},
	} {
		outer := generatedTypes[v.cStruct]
		uf, ok := outer.FieldByName(v.union)
		if !ok {
			t.Errorf("%s has no field %s", outer.Name(), v.union)
			continue
		}
		prefix := names.Offset(v.cStruct, v.path)
		base, ok := lookupOffset(prefix)
		if !ok {
			t.Errorf("no offset constant %s", prefix)
			continue
		}
		if base != uf.Offset || v.typ.Size() > uf.Type.Size() {
			t.Errorf("%s (%d bytes at %s) does not fit %s.%s (%d bytes at %d)", v.typ.Name(), v.typ.Size(), prefix, outer.Name(), v.union, uf.Type.Size(), uf.Offset)
		}
		n := 0
		for name, off := range mergedOffsets() {
			member, ok := strings.CutPrefix(name, prefix)
			if !ok || member == "" {
				continue
			}
			f, ok := v.typ.FieldByName(member)
			if !ok {
				t.Errorf("%s: %s has no field %s", name, v.typ.Name(), member)
				continue
			}
			if base+f.Offset != off {
				t.Errorf("%s = %d, but %s.%s is at %d+%d", name, off, v.typ.Name(), member, base, f.Offset)
			}
			n++
		}
		if n == 0 {
			t.Errorf("no member offset constants start with %s", prefix)
		}
	}
}

func mergedOffsets() map[string]uintptr {
	m := make(map[string]uintptr, len(generatedOffsets)+len(handOffsets))
	for k, v := range generatedOffsets {
		m[k] = v
	}
	for k, v := range handOffsets {
		m[k] = v
	}
	return m
}

// TestNames checks that every generated type carries the name the naming
// rules give its C name.
func TestNames(t *testing.T) {
	for c, typ := range generatedTypes {
		if want := names.Type(c); typ.Name() != want {
			t.Errorf("struct %s is Go %s, naming rules say %s", c, typ.Name(), want)
		}
	}
	for c, want := range map[string]string{
		"ib_uverbs_create_cq_resp": "UverbsCreateCQResp",
		"rxe_send_wqe":             "RxeSendWQE",
		"rdma_ucm_create_id":       "UcmCreateID",
		"mminfo":                   "RxeMminfo",
		"ib_uverbs_ioctl_hdr":      "UverbsIoctlHdr",
	} {
		if got := generatedTypes[c]; got == nil || got.Name() != want {
			t.Errorf("struct %s: Go type %v, want %s", c, got, want)
		}
	}
	for c, want := range map[string]string{
		"cq_handle": "CQHandle", "max_send_wr": "MaxSendWR", "qpn": "QPN", "wr_id": "WRID",
		"comp_channel": "CompChannel", "response": "Response", "__pad": "_",
	} {
		if got := names.Field(c); got != want {
			t.Errorf("names.Field(%q) = %q, want %q", c, got, want)
		}
	}
}

// TestFixedSizeMembers checks that no generated struct has a member whose
// size depends on the architecture (int, uintptr, pointers), which is what
// makes one generated file valid for both amd64 and arm64.
func TestFixedSizeMembers(t *testing.T) {
	var check func(path string, typ reflect.Type)
	check = func(path string, typ reflect.Type) {
		switch typ.Kind() {
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		case reflect.Array:
			check(path+"[]", typ.Elem())
		case reflect.Struct:
			for i := 0; i < typ.NumField(); i++ {
				f := typ.Field(i)
				if f.Type.PkgPath() == "structs" {
					continue
				}
				check(path+"."+f.Name, f.Type)
			}
		default:
			t.Errorf("%s has architecture-dependent kind %s", path, typ.Kind())
		}
	}
	for _, typ := range generatedTypes {
		check(typ.Name(), typ)
	}
	check("RxeSendWRFlush", reflect.TypeFor[RxeSendWRFlush]())
}

// TestGeneratedFilesUpToDate recomputes the hashes in the generated files'
// headers: it fails when the generator inputs changed without regenerating,
// or when a generated file was edited. It needs no C compiler.
func TestGeneratedFilesUpToDate(t *testing.T) {
	sources, err := stamp.SourcesHash(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"zabi.go", "zabi_test.go"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := stamp.Read(b)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if s.Body != s.BodyNow {
			t.Errorf("%s was edited after generation; run `go generate ./internal/abi` instead of editing it", file)
		}
		if s.Sources != sources {
			t.Errorf("%s is stale: internal/gen, internal/names or internal/stamp changed since it was generated; run `go generate ./internal/abi` (needs apt-get, dpkg-deb and gcc)", file)
		}
	}
}

// TestNoTrailingZeroSizeField guards against a trailing zero-size Go field,
// after which Go adds padding that C does not have; C flexible array members
// are left out of the Go structs for that reason.
func TestNoTrailingZeroSizeField(t *testing.T) {
	for _, typ := range generatedTypes {
		if n := typ.NumField(); n > 0 && typ.Field(n-1).Type.Size() == 0 {
			t.Errorf("%s ends with a zero-size field", typ.Name())
		}
	}
	if unsafe.Sizeof(RxeDMAInfo{}) != RxeDMAInfoOffSGE {
		t.Errorf("RxeDMAInfo is %d bytes, its flexible array starts at %d", unsafe.Sizeof(RxeDMAInfo{}), RxeDMAInfoOffSGE)
	}
}
