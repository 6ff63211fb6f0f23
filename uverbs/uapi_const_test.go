package uverbs

import (
	"testing"

	"github.com/goverbs/rdma/internal/abi"
)

// The public constants are written as numbers, so that the API snapshot
// (api/uverbs.txt) shows their values; each must equal the UAPI constant it
// stands for.
func TestConstantsMatchUAPI(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"DeviceResizeMaxWR", uint64(DeviceResizeMaxWR), uint64(abi.IB_UVERBS_DEVICE_RESIZE_MAX_WR)},
		{"DeviceBadPKeyCntr", uint64(DeviceBadPKeyCntr), uint64(abi.IB_UVERBS_DEVICE_BAD_PKEY_CNTR)},
		{"DeviceBadQKeyCntr", uint64(DeviceBadQKeyCntr), uint64(abi.IB_UVERBS_DEVICE_BAD_QKEY_CNTR)},
		{"DeviceRawMulti", uint64(DeviceRawMulti), uint64(abi.IB_UVERBS_DEVICE_RAW_MULTI)},
		{"DeviceAutoPathMig", uint64(DeviceAutoPathMig), uint64(abi.IB_UVERBS_DEVICE_AUTO_PATH_MIG)},
		{"DeviceChangePhyPort", uint64(DeviceChangePhyPort), uint64(abi.IB_UVERBS_DEVICE_CHANGE_PHY_PORT)},
		{"DeviceUDAVPortEnforce", uint64(DeviceUDAVPortEnforce), uint64(abi.IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE)},
		{"DeviceCurrQPStateMod", uint64(DeviceCurrQPStateMod), uint64(abi.IB_UVERBS_DEVICE_CURR_QP_STATE_MOD)},
		{"DeviceShutdownPort", uint64(DeviceShutdownPort), uint64(abi.IB_UVERBS_DEVICE_SHUTDOWN_PORT)},
		{"DevicePortActiveEvent", uint64(DevicePortActiveEvent), uint64(abi.IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT)},
		{"DeviceSysImageGUID", uint64(DeviceSysImageGUID), uint64(abi.IB_UVERBS_DEVICE_SYS_IMAGE_GUID)},
		{"DeviceRCRNRNAKGen", uint64(DeviceRCRNRNAKGen), uint64(abi.IB_UVERBS_DEVICE_RC_RNR_NAK_GEN)},
		{"DeviceSRQResize", uint64(DeviceSRQResize), uint64(abi.IB_UVERBS_DEVICE_SRQ_RESIZE)},
		{"DeviceNNotifyCQ", uint64(DeviceNNotifyCQ), uint64(abi.IB_UVERBS_DEVICE_N_NOTIFY_CQ)},
		{"DeviceMemWindow", uint64(DeviceMemWindow), uint64(abi.IB_UVERBS_DEVICE_MEM_WINDOW)},
		{"DeviceUDIPCsum", uint64(DeviceUDIPCsum), uint64(abi.IB_UVERBS_DEVICE_UD_IP_CSUM)},
		{"DeviceXRC", uint64(DeviceXRC), uint64(abi.IB_UVERBS_DEVICE_XRC)},
		{"DeviceMemMgtExtensions", uint64(DeviceMemMgtExtensions), uint64(abi.IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS)},
		{"DeviceMemWindowType2A", uint64(DeviceMemWindowType2A), uint64(abi.IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A)},
		{"DeviceMemWindowType2B", uint64(DeviceMemWindowType2B), uint64(abi.IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B)},
		{"DeviceRCIPCsum", uint64(DeviceRCIPCsum), uint64(abi.IB_UVERBS_DEVICE_RC_IP_CSUM)},
		{"DeviceRawIPCsum", uint64(DeviceRawIPCsum), uint64(abi.IB_UVERBS_DEVICE_RAW_IP_CSUM)},
		{"DeviceManagedFlowSteering", uint64(DeviceManagedFlowSteering), uint64(abi.IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING)},
		{"DeviceRawScatterFCS", uint64(DeviceRawScatterFCS), uint64(abi.IB_UVERBS_DEVICE_RAW_SCATTER_FCS)},
		{"DevicePCIWriteEndPadding", uint64(DevicePCIWriteEndPadding), uint64(abi.IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING)},
		{"GIDTypeIB", uint64(GIDTypeIB), uint64(abi.IB_UVERBS_GID_TYPE_IB)},
		{"GIDTypeRoCEv1", uint64(GIDTypeRoCEv1), uint64(abi.IB_UVERBS_GID_TYPE_ROCE_V1)},
		{"GIDTypeRoCEv2", uint64(GIDTypeRoCEv2), uint64(abi.IB_UVERBS_GID_TYPE_ROCE_V2)},
		{"AccessLocalWrite", uint64(AccessLocalWrite), uint64(abi.IB_UVERBS_ACCESS_LOCAL_WRITE)},
		{"AccessRemoteWrite", uint64(AccessRemoteWrite), uint64(abi.IB_UVERBS_ACCESS_REMOTE_WRITE)},
		{"AccessRemoteRead", uint64(AccessRemoteRead), uint64(abi.IB_UVERBS_ACCESS_REMOTE_READ)},
		{"AccessRemoteAtomic", uint64(AccessRemoteAtomic), uint64(abi.IB_UVERBS_ACCESS_REMOTE_ATOMIC)},
		{"AccessMWBind", uint64(AccessMWBind), uint64(abi.IB_UVERBS_ACCESS_MW_BIND)},
		{"AccessZeroBased", uint64(AccessZeroBased), uint64(abi.IB_UVERBS_ACCESS_ZERO_BASED)},
		{"AccessOnDemand", uint64(AccessOnDemand), uint64(abi.IB_UVERBS_ACCESS_ON_DEMAND)},
		{"AccessHugeTLB", uint64(AccessHugeTLB), uint64(abi.IB_UVERBS_ACCESS_HUGETLB)},
		{"AccessRelaxedOrdering", uint64(AccessRelaxedOrdering), uint64(abi.IB_UVERBS_ACCESS_RELAXED_ORDERING)},
		{"PortCapSM", uint64(PortCapSM), uint64(abi.IB_UVERBS_PCF_SM)},
		{"PortCapSysImageGUID", uint64(PortCapSysImageGUID), uint64(abi.IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP)},
		{"PortCapCMSupported", uint64(PortCapCMSupported), uint64(abi.IB_UVERBS_PCF_CM_SUP)},
		{"PortCapIPBasedGIDs", uint64(PortCapIPBasedGIDs), uint64(abi.IB_UVERBS_PCF_IP_BASED_GIDS)},
		{"RC", uint64(RC), uint64(abi.IB_UVERBS_QPT_RC)},
		{"UC", uint64(UC), uint64(abi.IB_UVERBS_QPT_UC)},
		{"UD", uint64(UD), uint64(abi.IB_UVERBS_QPT_UD)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, the UAPI has %#x", c.name, c.got, c.want)
		}
	}
}
