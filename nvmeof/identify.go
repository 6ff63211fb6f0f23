package nvmeof

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
)

// ControllerInfo is what Identify Controller (CNS 01h) says, the fields a
// host needs and nvme-cli's `id-ctrl` prints first. Offsets: NVMe base
// specification, "Identify Controller Data Structure" (kernel:
// include/linux/nvme.h struct nvme_id_ctrl).
type ControllerInfo struct {
	VendorID      uint16 // vid
	SerialNumber  string // sn, trailing spaces removed
	ModelNumber   string // mn
	Firmware      string // fr
	ControllerID  uint16 // cntlid
	Version       uint32 // ver: major << 16 | minor << 8 | tertiary
	MDTS          uint8  // the raw MDTS field: 2^MDTS pages per command, 0 for no limit
	MaxCommands   int    // maxcmd
	Namespaces    uint32 // nn: the highest namespace ID
	ONCS          uint16 // optional NVM commands: bit 2 Dataset Management, bit 3 Write Zeroes
	VWC           uint8  // volatile write cache
	KeepAliveUnit uint16 // kas, in 100 ms
	SGLSupport    uint32 // sgls
	SubsystemNQN  string // subnqn
	// MaxDataTransfer is MDTS in bytes (with 4 KiB pages), 0 for no limit.
	MaxDataTransfer int
	// IOCommandCapsuleSize is ioccsz in bytes: the command capsule's
	// size on I/O queues, 64 plus the in-capsule data the target takes.
	IOCommandCapsuleSize int
	// InCapsuleDataOffset is icdoff in bytes.
	InCapsuleDataOffset int
}

// WriteZeroes reports whether the controller offers Write Zeroes.
func (ci ControllerInfo) WriteZeroes() bool { return ci.ONCS&(1<<3) != 0 }

func ascii(b []byte) string {
	return strings.TrimRight(string(bytes.TrimRight(b, "\x00")), " ")
}

func parseIdentifyController(b []byte) (ControllerInfo, error) {
	if len(b) < identifySize {
		return ControllerInfo{}, fmt.Errorf("%w: identify controller data of %d bytes", ErrProtocol, len(b))
	}
	ci := ControllerInfo{
		VendorID:             binary.LittleEndian.Uint16(b[0:]),
		SerialNumber:         ascii(b[4:24]),
		ModelNumber:          ascii(b[24:64]),
		Firmware:             ascii(b[64:72]),
		MDTS:                 b[77],
		ControllerID:         binary.LittleEndian.Uint16(b[78:]),
		Version:              le32(b[80:]),
		KeepAliveUnit:        binary.LittleEndian.Uint16(b[320:]),
		MaxCommands:          int(binary.LittleEndian.Uint16(b[514:])),
		Namespaces:           le32(b[516:]),
		ONCS:                 binary.LittleEndian.Uint16(b[520:]),
		VWC:                  b[525],
		SGLSupport:           le32(b[536:]),
		SubsystemNQN:         ascii(b[768:1024]),
		IOCommandCapsuleSize: int(le32(b[1792:])) * 16,
		InCapsuleDataOffset:  int(binary.LittleEndian.Uint16(b[1800:])) * 16,
	}
	if ci.MDTS != 0 && ci.MDTS < 20 {
		ci.MaxDataTransfer = 4096 << ci.MDTS
	}
	return ci, nil
}

func (c *Controller) identifyController(ctx context.Context) (ControllerInfo, error) {
	cmd := identifyCommand(cnsController, 0)
	b := make([]byte, identifySize)
	if _, err := c.admin.exchange(ctx, "identify controller", &cmd, nil, b); err != nil {
		return ControllerInfo{}, err
	}
	return parseIdentifyController(b)
}

// NamespaceInfo is what Identify Namespace (CNS 00h) says ("Identify
// Namespace Data Structure, NVM Command Set"; kernel: struct nvme_id_ns).
type NamespaceInfo struct {
	ID        uint32
	Size      uint64 // nsze, in blocks
	Capacity  uint64 // ncap, in blocks
	Used      uint64 // nuse, in blocks
	BlockSize int    // bytes per block of the format in use (flbas)
	Metadata  int    // metadata bytes per block of that format
	NGUID     [16]byte
	EUI64     [8]byte
}

func parseIdentifyNamespace(id uint32, b []byte) (NamespaceInfo, error) {
	if len(b) < identifySize {
		return NamespaceInfo{}, fmt.Errorf("%w: identify namespace data of %d bytes", ErrProtocol, len(b))
	}
	ni := NamespaceInfo{
		ID:       id,
		Size:     binary.LittleEndian.Uint64(b[0:]),
		Capacity: binary.LittleEndian.Uint64(b[8:]),
		Used:     binary.LittleEndian.Uint64(b[16:]),
	}
	copy(ni.NGUID[:], b[104:120])
	copy(ni.EUI64[:], b[120:128])
	f := b[128+4*int(b[26]&0xf):]
	ni.Metadata = int(binary.LittleEndian.Uint16(f))
	if ds := f[2]; ds >= 9 && ds < 32 {
		ni.BlockSize = 1 << ds
	} else if ni.Size != 0 {
		return ni, fmt.Errorf("%w: namespace %d has blocks of 2^%d bytes", ErrProtocol, id, ds)
	}
	return ni, nil
}

// IdentifyNamespace returns what the controller says of namespace id; an
// ID with no namespace gives a StatusError (invalid namespace) or, from
// some controllers, a Size of 0.
func (c *Controller) IdentifyNamespace(ctx context.Context, id uint32) (NamespaceInfo, error) {
	cmd := identifyCommand(cnsNamespace, id)
	b := make([]byte, identifySize)
	if _, err := c.admin.exchange(ctx, fmt.Sprintf("identify namespace %d", id), &cmd, nil, b); err != nil {
		return NamespaceInfo{}, err
	}
	return parseIdentifyNamespace(id, b)
}

// ActiveNamespaces returns the IDs of the controller's active namespaces
// (Identify CNS 02h), in order.
func (c *Controller) ActiveNamespaces(ctx context.Context) ([]uint32, error) {
	var ids []uint32
	after := uint32(0)
	for {
		cmd := identifyCommand(cnsActiveNSList, after)
		b := make([]byte, identifySize)
		if _, err := c.admin.exchange(ctx, "identify active namespaces", &cmd, nil, b); err != nil {
			return nil, err
		}
		n := 0
		for off := 0; off < identifySize; off += 4 {
			id := le32(b[off:])
			if id == 0 {
				break
			}
			if id <= after {
				return nil, fmt.Errorf("%w: active namespace list not ascending (%d after %d)", ErrProtocol, id, after)
			}
			ids = append(ids, id)
			after = id
			n++
		}
		if n < identifySize/4 {
			return ids, nil
		}
	}
}

// DiscoveryEntry is one record of a discovery log page (NVMe over Fabrics,
// "Discovery Log Page Entry"; kernel: struct nvmf_disc_rsp_page_entry).
type DiscoveryEntry struct {
	TransportType    uint8 // trtype: 1 RDMA, 3 TCP
	AddressFamily    uint8 // adrfam: 1 IPv4, 2 IPv6, 3 InfiniBand
	SubsystemType    uint8 // subtype: 1 a discovery referral, 2 an NVM subsystem, 3 this discovery controller
	Requirements     uint8 // treq
	PortID           uint16
	ControllerID     uint16 // 0xFFFF: the dynamic controller model
	AdminQueueSize   uint16 // asqsz
	ServiceID        string // trsvcid: the port, e.g. "4420"
	SubsystemNQN     string
	Address          string // traddr
	RDMAQPType       uint8  // tsas: 1 reliable connected
	RDMAProviderType uint8  // tsas: 1 none, 2 InfiniBand, 3 RoCE, 4 RoCE v2, 5 iWARP
	RDMACMService    uint8  // tsas: 1 RDMA_IP_CM
	RDMAPKey         uint16
}

// transport names of trtype, adrfam, subtype and the RDMA fields, as
// nvme-cli prints them.
var (
	trtypeNames  = map[uint8]string{1: "rdma", 2: "fc", 3: "tcp", 254: "loop"}
	adrfamNames  = map[uint8]string{1: "ipv4", 2: "ipv6", 3: "infiniband", 4: "fibre-channel", 254: "loop"}
	subtypeNames = map[uint8]string{1: "discovery subsystem referral", 2: "nvme subsystem", 3: "current discovery subsystem"}
	prtypeNames  = map[uint8]string{1: "not specified", 2: "infiniband", 3: "roce", 4: "roce-v2", 5: "iwarp"}
	qptypeNames  = map[uint8]string{1: "connected", 2: "datagram"}
	cmsNames     = map[uint8]string{1: "rdma-cm"}
)

func name(m map[uint8]string, v uint8) string {
	if s, ok := m[v]; ok {
		return s
	}
	return fmt.Sprintf("unrecognized (%d)", v)
}

func (e DiscoveryEntry) Transport() string    { return name(trtypeNames, e.TransportType) }
func (e DiscoveryEntry) Family() string       { return name(adrfamNames, e.AddressFamily) }
func (e DiscoveryEntry) Subtype() string      { return name(subtypeNames, e.SubsystemType) }
func (e DiscoveryEntry) RDMAProvider() string { return name(prtypeNames, e.RDMAProviderType) }
func (e DiscoveryEntry) RDMAQP() string       { return name(qptypeNames, e.RDMAQPType) }
func (e DiscoveryEntry) RDMACM() string       { return name(cmsNames, e.RDMACMService) }

func parseDiscoveryEntry(b []byte) DiscoveryEntry {
	return DiscoveryEntry{
		TransportType:    b[0],
		AddressFamily:    b[1],
		SubsystemType:    b[2],
		Requirements:     b[3],
		PortID:           binary.LittleEndian.Uint16(b[4:]),
		ControllerID:     binary.LittleEndian.Uint16(b[6:]),
		AdminQueueSize:   binary.LittleEndian.Uint16(b[8:]),
		ServiceID:        ascii(b[32:64]),
		SubsystemNQN:     ascii(b[256:512]),
		Address:          ascii(b[512:768]),
		RDMAQPType:       b[768],
		RDMAProviderType: b[769],
		RDMACMService:    b[770],
		RDMAPKey:         binary.LittleEndian.Uint16(b[776:]),
	}
}

// maxDiscoveryRecords bounds what a discovery log page may claim, so that a
// hostile controller cannot make us read forever (1024 records is 1 MiB).
const maxDiscoveryRecords = 1024

// discoveryLog reads the discovery log page in 4 KiB pieces and reads its
// header again at the end: if the generation counter changed, the log
// changed under us and is read again (NVMe over Fabrics, "Discovery Log
// Page": the host's procedure).
func (c *Controller) discoveryLog(ctx context.Context) (*DiscoveryLog, error) {
	read := func(off uint64, b []byte) error {
		cmd := getLogPage(logDiscovery, off, len(b))
		_, err := c.admin.exchange(ctx, "get log page (discovery)", &cmd, nil, b)
		return err
	}
	for try := 0; try < 3; try++ {
		// The header alone first: a target may hold no more than the log
		// (the kernel's target allocates 1024 bytes per record plus the
		// header, and before 2026 copied past it for a longer read:
		// drivers/nvme/target/discovery.c
		// nvmet_execute_disc_get_log_page), as libnvme reads it.
		hdr := make([]byte, discoveryHdrSize)
		if err := read(0, hdr); err != nil {
			return nil, err
		}
		gen := binary.LittleEndian.Uint64(hdr)
		numrec := binary.LittleEndian.Uint64(hdr[8:])
		if numrec > maxDiscoveryRecords {
			return nil, fmt.Errorf("%w: the discovery log claims %d records", ErrProtocol, numrec)
		}
		log := make([]byte, discoveryHdrSize+int(numrec)*discoveryEntrySize)
		n := copy(log, hdr)
		for n < len(log) {
			chunk := make([]byte, min(adminDataSize, len(log)-n))
			if err := read(uint64(n), chunk); err != nil {
				return nil, err
			}
			n += copy(log[n:], chunk)
		}
		if err := read(0, hdr); err != nil {
			return nil, err
		}
		if binary.LittleEndian.Uint64(hdr) != gen {
			continue
		}
		dl := &DiscoveryLog{Generation: gen, Entries: make([]DiscoveryEntry, numrec)}
		for i := range dl.Entries {
			off := discoveryHdrSize + i*discoveryEntrySize
			dl.Entries[i] = parseDiscoveryEntry(log[off : off+discoveryEntrySize])
		}
		return dl, nil
	}
	return nil, fmt.Errorf("nvmeof: the discovery log kept changing while it was read (3 tries)")
}

// DiscoveryLog is a discovery controller's log page.
type DiscoveryLog struct {
	Generation uint64 // genctr: changes whenever the log does
	Entries    []DiscoveryEntry
}

// Discover connects to the discovery controller at address and returns its
// log page: the subsystems it offers and where (`nvme discover -t rdma`).
func Discover(ctx context.Context, address string, cfg *Config) (*DiscoveryLog, error) {
	s, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	s.KeepAlive = -1
	c, err := connect(ctx, address, DiscoveryNQN, s, false)
	if err != nil {
		return nil, err
	}
	dl, err := c.discoveryLog(ctx)
	if cerr := c.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return dl, err
}
