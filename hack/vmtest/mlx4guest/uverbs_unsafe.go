package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The device attributes `ibv_devinfo -v` prints, read as libibverbs reads
// them, without rdma-core: the legacy write() commands of ib_uverbs
// (include/uapi/rdma/ib_user_verbs.h) GET_CONTEXT, then QUERY_DEVICE,
// which mlx4_ib answers from mlx4_ib_query_device.
const (
	uverbsGetContext  = 0 // IB_USER_VERBS_CMD_GET_CONTEXT
	uverbsQueryDevice = 1 // IB_USER_VERBS_CMD_QUERY_DEVICE
	// struct ib_uverbs_query_device_resp: 176 bytes; the offsets of the
	// multicast fields.
	queryDeviceRespSize         = 176
	respMaxMcastGrp             = 132
	respMaxMcastQPAttach        = 136
	respMaxTotalMcastQPAttach   = 140
	getContextRespSize          = 8  // struct ib_uverbs_get_context_resp
	mlx4AllocUcontextRespMaxLen = 56 // room for mlx4_ib_alloc_ucontext_resp (16 bytes)
)

// deviceAttrs are the multicast limits of an RDMA device, as signed ints
// (ibv_devinfo prints them with %d).
type deviceAttrs struct {
	MaxMcastGrp, MaxMcastQPAttach, MaxTotalMcastQPAttach int32
}

// uverbsCommand writes one legacy command: the header {command, in_words,
// out_words}, then the command's response pointer, to resp.
func uverbsCommand(f *os.File, cmd uint32, resp []byte) error {
	var b [16]byte
	binary.LittleEndian.PutUint32(b[0:], cmd)
	binary.LittleEndian.PutUint16(b[4:], uint16(len(b)/4))
	binary.LittleEndian.PutUint16(b[6:], uint16(len(resp)/4))
	binary.LittleEndian.PutUint64(b[8:], uint64(uintptr(unsafe.Pointer(&resp[0]))))
	_, err := unix.Write(int(f.Fd()), b[:])
	runtime.KeepAlive(resp)
	return err
}

// queryDevice opens dev (/dev/infiniband/uverbsN), creates a user context
// and queries the device; the context goes with the file.
func queryDevice(dev string) (deviceAttrs, error) {
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return deviceAttrs{}, err
	}
	defer f.Close()
	ctx := make([]byte, getContextRespSize+mlx4AllocUcontextRespMaxLen)
	if err := uverbsCommand(f, uverbsGetContext, ctx); err != nil {
		return deviceAttrs{}, fmt.Errorf("%s: GET_CONTEXT: %w", dev, err)
	}
	if fd := int(binary.LittleEndian.Uint32(ctx[0:])); fd > 2 {
		defer unix.Close(fd) // the context's async event file
	}
	resp := make([]byte, queryDeviceRespSize)
	if err := uverbsCommand(f, uverbsQueryDevice, resp); err != nil {
		return deviceAttrs{}, fmt.Errorf("%s: QUERY_DEVICE: %w", dev, err)
	}
	return deviceAttrs{
		MaxMcastGrp:           int32(binary.LittleEndian.Uint32(resp[respMaxMcastGrp:])),
		MaxMcastQPAttach:      int32(binary.LittleEndian.Uint32(resp[respMaxMcastQPAttach:])),
		MaxTotalMcastQPAttach: int32(binary.LittleEndian.Uint32(resp[respMaxTotalMcastQPAttach:])),
	}, nil
}
