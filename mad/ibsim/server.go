package ibsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/capture"
)

// Protocol constants (ibsim include/ibsim.h).
const (
	MaxClients  = 10
	ctlSize     = 80
	ctlDataSize = 64
	requestSize = 288
	simMagic    = 0xDEADBEEF
	// StatusDropped is the sim_request status of a MAD nobody answered.
	StatusDropped = 110
)

// Control message types.
const (
	ctlError = iota
	ctlConnect
	ctlDisconnect
	ctlGetPort
	ctlGetVendor
	ctlGetGID
	ctlGetGUID
	ctlGetNodeInfo
	ctlGetPortInfo
	ctlSetIsSM
	ctlGetPKeys
)

var (
	le = binary.LittleEndian // the protocol's host-order fields (x86)
	be = binary.BigEndian
)

// Options configure a Server.
type Options struct {
	// Port is the engine port the clients attach to; 0 means 1.
	Port uint8
	// NodeID is the node name returned on CONNECT; "" means "vhcrd".
	NodeID string
	// FWVersion is reported by GET_VENDOR.
	FWVersion uint64
	// Logger, if set, gets one line per malformed datagram.
	Logger *slog.Logger
	// Fabric, if set, is the link partner of the engine's ports: SMPs
	// routed beyond the port reach its switch and the engine's other
	// cabled ports.
	Fabric *Fabric
	// Capture, if set, records every MAD the clients send and every reply
	// as it would cross the link (traps are recorded by giving the same
	// Writer to the engine as a sink).
	Capture *capture.Writer
	// Tunnel, if set, gets every MAD that reaches a port of the engine's
	// QP1 for the PF's tunnel to demultiplex (hca.HCA.ReceiveMAD), with
	// the port it reached: a response whose TID's most significant byte is
	// not zero (mlx4's slave byte, which the PF's tunnel set in a VF's
	// request, SendTunnel), and every CM MAD, which the PF hands to the VF
	// its comm ID or GID names (mlx4_ib's cm.c) — sent to this port or,
	// through the fabric, to another of the engine's ports. It runs on the
	// server's goroutines. The clients' own requests carry their index in
	// TID bits 55:48 and a zero top byte, as the PF's own MADs do.
	Tunnel func(port uint8, wc *mad.WC, m *mad.MAD)
}

// smClasses are the management classes the SM client has agents for: what
// OpenSM binds by default (osm_sm_mad_ctrl_bind: the SMI's, LID-routed and
// directed; osm_sa_mad_ctrl_bind: the SA's). A request or trap of another
// class is not sent to it: the SM host's MAD layer would drop it for want
// of an agent, and libumad2sim, which has no such check, would crash on it
// (its reader thread dereferences the NULL queue of the class's agent).
var smClasses = []uint8{mad.ClassSubnLID, mad.ClassSubnDirected, mad.ClassSubnAdm}

// smTakes reports whether the SM client has an agent for class.
func smTakes(class uint8) bool { return slices.Contains(smClasses, class) }

// tunnelSender is the sender index of the PF's tunnel: no client slot.
const tunnelSender = MaxClients

type client struct {
	used bool
	issm bool
	pid  uint32
	in   *net.UnixAddr
}

// Server is an ibsim-protocol server for one engine port.
type Server struct {
	e    *mad.Engine
	name string
	opt  Options
	ctl  *net.UnixConn
	out  [MaxClients]*net.UnixConn

	mu      sync.Mutex
	clients [MaxClients]client
	closed  bool
	wg      sync.WaitGroup
}

func abstract(name string) *net.UnixAddr {
	// ibsim's make_name counts the terminating NUL into the address.
	return &net.UnixAddr{Name: "@" + name + "\x00", Net: "unixgram"}
}

// Listen binds the server's sockets under name (what IBSIM_SOCKNAME gives
// the tools) and starts serving in background goroutines until Close.
func Listen(name string, e *mad.Engine, opt Options) (*Server, error) {
	if name == "" || strings.ContainsRune(name, 0) || len(name) > 80 {
		return nil, fmt.Errorf("ibsim: bad socket name %q", name)
	}
	if opt.Port == 0 {
		opt.Port = 1
	}
	if int(opt.Port) > e.NumPorts() {
		return nil, fmt.Errorf("ibsim: port %d of %d", opt.Port, e.NumPorts())
	}
	if opt.NodeID == "" {
		opt.NodeID = "vhcrd"
	}
	if f := opt.Fabric; f != nil {
		switch f.cabled {
		case nil:
			if err := f.validate(e, opt.Port); err != nil {
				return nil, err
			}
		case e: // cabled at the daemon's start (Cable)
		default:
			return nil, fmt.Errorf("ibsim: fabric cabled to another engine")
		}
	}
	s := &Server{e: e, name: name, opt: opt}
	var err error
	if s.ctl, err = net.ListenUnixgram("unixgram", abstract(name+":ctl")); err != nil {
		return nil, fmt.Errorf("ibsim: %w", err)
	}
	for i := range s.out {
		if s.out[i], err = net.ListenUnixgram("unixgram", abstract(fmt.Sprintf("%s:out%d", name, i))); err != nil {
			s.Close()
			return nil, fmt.Errorf("ibsim: %w", err)
		}
	}
	s.wg.Add(1 + MaxClients)
	go s.serveCtl()
	for i := range s.out {
		go s.serveData(i)
	}
	return s, nil
}

// Close stops the server and waits for its goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	var errs []error
	if s.ctl != nil {
		errs = append(errs, s.ctl.Close())
	}
	for _, c := range s.out {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

func (s *Server) warn(msg string, args ...any) {
	if s.opt.Logger != nil {
		s.opt.Logger.Warn("ibsim: "+msg, args...)
	}
}

func (s *Server) serveCtl() {
	defer s.wg.Done()
	var buf [ctlSize + 1]byte
	for {
		n, from, err := s.ctl.ReadFromUnix(buf[:])
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if n != ctlSize || le.Uint32(buf[0:]) != simMagic {
			s.warn("bad control datagram", "len", n)
			continue
		}
		reply := buf[:ctlSize]
		s.handleCtl(reply)
		if from != nil && strings.HasPrefix(from.Name, "@") {
			// Go drops the trailing NUL that the client's abstract
			// name carries; put it back.
			_, _ = s.ctl.WriteToUnix(reply, abstract(from.Name[1:]))
		}
	}
}

// handleCtl answers one control request in place.
func (s *Server) handleCtl(c []byte) {
	id := le.Uint32(c[4:])
	typ := le.Uint32(c[8:])
	data := c[16:ctlSize]
	if typ != ctlConnect && id >= MaxClients {
		le.PutUint32(c[8:], ctlError)
		return
	}
	ok := true
	switch typ {
	case ctlConnect:
		ok = s.connect(data)
	case ctlDisconnect:
		s.mu.Lock()
		s.clients[id] = client{}
		s.mu.Unlock()
	case ctlGetPort:
		pi, _ := s.e.PortInfo(s.opt.Port)
		clear(data)
		le.PutUint16(data[0:], pi.LID)
		data[2] = uint8(pi.PortState)
	case ctlGetVendor:
		ni := s.nodeInfo()
		clear(data)
		le.PutUint32(data[0:], ni.VendorID)
		le.PutUint32(data[4:], uint32(ni.DeviceID))
		le.PutUint32(data[8:], ni.Revision)
		le.PutUint64(data[16:], s.opt.FWVersion)
	case ctlGetGID:
		pi, _ := s.e.PortInfo(s.opt.Port)
		ni := s.nodeInfo()
		clear(data)
		be.PutUint64(data[0:], pi.GIDPrefix)
		be.PutUint64(data[8:], ni.PortGUID)
	case ctlGetGUID:
		ni := s.nodeInfo()
		clear(data)
		be.PutUint64(data[0:], ni.NodeGUID)
	case ctlGetNodeInfo:
		out, res := s.get(mad.AttrNodeInfo, 0)
		clear(data)
		if ok = res&mad.Reply != 0; ok {
			copy(data, out.SMPData())
		}
	case ctlGetPortInfo:
		port := uint32(data[0])
		if port == 0 || port > uint32(s.e.NumPorts()) {
			port = uint32(s.opt.Port)
		}
		out, res := s.get(mad.AttrPortInfo, port)
		clear(data)
		if ok = res&mad.Reply != 0; ok {
			copy(data, out.SMPData())
		}
	case ctlSetIsSM:
		s.mu.Lock()
		if s.clients[id].used {
			s.clients[id].issm = le.Uint32(data) != 0
		}
		s.mu.Unlock()
	case ctlGetPKeys:
		out, res := s.get(mad.AttrPKeyTable, 0)
		clear(data)
		if ok = res&mad.Reply != 0; ok {
			copy(data, out.SMPData())
		}
	default:
		ok = false
	}
	if !ok {
		le.PutUint32(c[8:], ctlError)
	}
}

// get runs a local SubnGet (no WC: generated here, M_Key ignored).
func (s *Server) get(attr uint16, mod uint32) (mad.MAD, mad.Result) {
	var in mad.MAD
	in[0], in[1], in[2], in[3] = 1, mad.ClassSubnLID, 1, mad.MethodGet
	be.PutUint16(in[16:], attr)
	be.PutUint32(in[20:], mod)
	return s.e.ProcessMAD(mad.IgnoreAll, s.opt.Port, nil, nil, &in)
}

func (s *Server) nodeInfo() mad.NodeInfo {
	var ni mad.NodeInfo
	out, res := s.get(mad.AttrNodeInfo, 0)
	if res&mad.Reply != 0 {
		_ = ni.Decode(out.SMPData())
	}
	return ni
}

func (s *Server) record(slid, dlid uint16, sqp, dqp uint32, m *mad.MAD) {
	if s.opt.Capture == nil {
		return
	}
	p := capture.Packet{SLID: slid, DLID: dlid, SrcQP: sqp, DestQP: dqp, PKey: mad.DefaultPKey, MAD: m}
	if c := m.MgmtClass(); c == mad.ClassSubnLID || c == mad.ClassSubnDirected {
		p.VL = 15
	} else {
		p.QKey = mad.QP1QKey
	}
	_ = s.opt.Capture.WritePacket(&p)
}

// SendTrap implements mad.TrapSink: a trap goes, as an unsolicited
// sim_request, to every client attached as an SM (SIM_SET_ISSM or SET_ISSM),
// as ibsim delivers traps to its SM client, if the SM has an agent for its
// class (smClasses: OpenSM has none for BM's). Without one the
// trap is dropped here (the engine still counts and resends it).
func (s *Server) SendTrap(t mad.Trap) {
	if !smTakes(t.MAD.MgmtClass()) {
		return
	}
	var req [requestSize]byte
	putRequest(req[:], t.DLID, t.SLID, t.DestQP, t.SrcQP, &t.MAD)
	var to [MaxClients]*net.UnixAddr
	s.mu.Lock()
	for i := range s.clients {
		if c := &s.clients[i]; c.used && c.issm && !s.closed {
			to[i] = c.in
		}
	}
	s.mu.Unlock()
	for i, a := range to {
		if a != nil {
			_, _ = s.out[i].WriteToUnix(req[:], a)
		}
	}
}

// connect handles CONNECT: sim_client_info {id (pid), qp, issm, nodeid[32]}.
// When all slots are taken, slots of clients that went away without
// DISCONNECT (a tool killed by its timeout) are reclaimed: their input
// socket no longer exists.
func (s *Server) connect(info []byte) bool {
	pid := le.Uint32(info[0:])
	c := client{used: true, pid: pid, issm: le.Uint32(info[8:]) != 0,
		in: abstract(fmt.Sprintf("%s:in%d", s.name, pid))}
	for attempt := 0; attempt < 2; attempt++ {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return false
		}
		for i := range s.clients {
			if !s.clients[i].used || s.clients[i].pid == pid {
				s.clients[i] = c
				s.mu.Unlock()
				le.PutUint32(info[0:], uint32(i))
				nodeid := info[12:44]
				clear(nodeid)
				copy(nodeid[:31], s.opt.NodeID)
				return true
			}
		}
		var old [MaxClients]client
		copy(old[:], s.clients[:])
		s.mu.Unlock()
		for i := range old {
			if gone(old[i].in) {
				s.mu.Lock()
				if s.clients[i].pid == old[i].pid {
					s.clients[i] = client{}
				}
				s.mu.Unlock()
			}
		}
	}
	return false
}

// gone reports whether nobody is bound to a client's input socket.
func gone(a *net.UnixAddr) bool {
	if a == nil {
		return true
	}
	c, err := net.DialUnix("unixgram", nil, a)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

func (s *Server) clientAddr(i int) *net.UnixAddr {
	if i < 0 || i >= MaxClients {
		return nil // the tunnel, or nobody
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.clients[i].used {
		return nil
	}
	return s.clients[i].in
}

func (s *Server) serveData(i int) {
	defer s.wg.Done()
	conn := s.out[i]
	var buf [requestSize + 1]byte
	for {
		n, err := conn.Read(buf[:])
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		to := s.clientAddr(i)
		if to == nil {
			s.warn("packet from an unconnected client", "client", i)
			continue
		}
		if n != requestSize {
			s.warn("bad request size", "client", i, "len", n)
			continue
		}
		req := buf[:requestSize]
		dest, send := s.handle(i, req)
		if !send {
			continue
		}
		if dest == i {
			_, _ = conn.WriteToUnix(req, to)
			continue
		}
		if dest == tunnelSender {
			s.toTunnel(req)
			continue
		}
		if da := s.clientAddr(dest); da != nil {
			if _, err := s.out[dest].WriteToUnix(req, da); err == nil {
				continue
			}
		}
		// The agent's client went away: a request times out at its
		// sender, as ibsim answers a failed forward; a response is lost.
		if !isResponse(req) {
			s.dropped(req)
			_, _ = conn.WriteToUnix(req, to)
		}
	}
}

func isResponse(req []byte) bool { return req[32+3]&mad.MethodResp != 0 }

// dropped turns a request into its StatusDropped reply, addressed back to
// its sender.
func (s *Server) dropped(req []byte) {
	dlid, slid := be.Uint16(req[0:]), be.Uint16(req[4:])
	dqp, sqp := be.Uint32(req[8:]), be.Uint32(req[12:])
	be.PutUint16(req[0:], slid)
	be.PutUint16(req[4:], dlid)
	be.PutUint32(req[8:], sqp)
	be.PutUint32(req[12:], dqp)
	be.PutUint32(req[16:], StatusDropped)
}

// agent finds the client a MAD the port's agents own goes to, as ibsim's
// find_client does: a response to the client whose index its request's
// TID carries in bits 63:48 (set when the request was forwarded), a
// request on QP0 or QP1 to the client attached as an SM. It reports -1 for
// nobody.
func (s *Server) agent(m *mad.MAD) int {
	if s.opt.Tunnel != nil && (m.IsResponse() && m.TID()>>56 != 0 || m.MgmtClass() == mad.ClassCM) {
		return tunnelSender // a VF's: the tunnel demultiplexes it
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.IsResponse() {
		if i := int(m.TID() >> 48); i < MaxClients && s.clients[i].used {
			return i
		}
		return -1
	}
	if !smTakes(m.MgmtClass()) {
		return -1 // no agent for it: the SM host's MAD layer drops it
	}
	for i := range s.clients {
		if s.clients[i].used && s.clients[i].issm {
			return i
		}
	}
	return -1
}

// smClient is the client attached as an SM, or -1.
func (s *Server) smClient() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.clients {
		if s.clients[i].used && s.clients[i].issm {
			return i
		}
	}
	return -1
}

// frameRMPP does for a client's MAD what the sending host's MAD layer does
// for an RMPP agent (Linux's ib_mad for OpenSM's SA, which sets only the
// ACTIVE flag and leaves the rest to the kernel): a transfer that fits one
// MAD becomes one DATA segment — version 1, FIRST and LAST, segment 1, the
// payload length from the sim_request's length (umad2sim's write size, at
// most a MAD: a larger transfer never reaches the server whole). A MAD
// already framed (version set) or not RMPP-active is left alone; so the
// receiver's own RMPP (a guest kernel's, through the PF's tunnel) gets
// what a real SA host sends.
func frameRMPP(m *mad.MAD, length uint64) {
	if m.MgmtClass() != mad.ClassSubnAdm || m[mad.RMPPFlagsOff]&mad.RMPPActive == 0 || m[mad.RMPPVersionOff] != 0 {
		return
	}
	if length < mad.RMPPHdrEnd || length > mad.Size {
		length = mad.Size
	}
	m[mad.RMPPVersionOff], m[mad.RMPPTypeOff], m[mad.RMPPStatusOff] = mad.RMPPVersion, mad.RMPPTypeData, 0
	m[mad.RMPPFlagsOff] |= mad.RMPPFirstLast
	be.PutUint32(m[mad.RMPPSegNumOff:], 1)
	be.PutUint32(m[mad.RMPPPayLenOff:], uint32(length-mad.RMPPHdrEnd))
}

// Handle turns one 288-byte sim_request into its reply, in place, and
// reports whether the reply is to be sent. A MAD that expects no response
// (TrapRepress, a response) gets none, as on a real link. The request's DLID
// (big-endian in the first two bytes of each LID word) must be the port's
// LID, one of its LMC aliases, or the permissive LID for a directed-route
// SMP; with a Fabric, a directed-route SMP with a hop count travels its
// path and a LID-routed MAD may name the switch or, through its forwarding
// table, another cabled port.
// A request nobody answers gets StatusDropped, ibsim's timeout. Handle
// has no sender, so a MAD for the port's agents (an SM client) is not
// forwarded: it is dropped as if no SM were attached.
func (s *Server) Handle(req []byte) bool {
	_, send := s.handle(-1, req)
	return send
}

// handle is Handle for a request from client `sender`: it reports where the
// rewritten buffer goes, the sender (dest == sender) or, for a MAD that
// reached the port and that the engine leaves to other agents (SMInfo, SA,
// any GS class it does not implement, a response), the client agent finds.
// A forwarded request keeps its addressing (SLID filled in) and carries
// the sender's index in TID bits 63:48, so that the response finds its way
// back; a forwarded response goes as its responder sent it.
//
// The stages: parse the request (parseRequest), deliver it where its
// addressing takes it (route), then forward it to a client, drop it, or
// write the reply over the request (writeReply).
func (s *Server) handle(sender int, req []byte) (dest int, send bool) {
	if len(req) != requestSize {
		return sender, false
	}
	r := s.parseRequest(req)
	if sender >= 0 && sender < MaxClients {
		frameRMPP(&r.in, be.Uint64(req[24:]))
	}
	noReply := r.in.Method() == mad.MethodTrapRepress || r.in.IsResponse()
	out, ok, from, to := s.route(sender, &r)
	if to >= 0 {
		be.PutUint16(req[4:], r.slid)
		if !r.in.IsResponse() && sender != tunnelSender {
			be.PutUint64(r.in[8:], r.in.TID()&(1<<48-1)|uint64(sender)<<48)
		}
		copy(req[32:], r.in[:])
		return to, true
	}
	if noReply {
		return sender, false
	}
	status := uint32(StatusDropped)
	if ok {
		status = 0
		s.record(from, r.slid, r.dqp, r.sqp, &out)
	} else {
		out = r.in
	}
	writeReply(req, &r, from, status, &out)
	return sender, true
}

// request is a parsed request: its addressing, the port's LID and LMC mask,
// the MAD.
type request struct {
	dlid, slid uint16
	dqp, sqp   uint32
	lid, mask  uint16
	sl         uint8
	pkeyIndex  uint16   // the sending port's P_Key index (a client's: 0)
	qkey       uint32   // the packet's Q_Key, if tunneled (a client's: not known)
	grh        *mad.GRH // the packet's GRH (a client's: none)
	in         mad.MAD
}

// wc is the work completion of the request at the node it reaches.
func (r *request) wc() mad.WC {
	return mad.WC{SLID: r.slid, SrcQP: r.sqp & 0xFFFFFF, QPN: r.dqp, SL: r.sl, PKeyIndex: r.pkeyIndex,
		GRHPresent: r.grh != nil, QKey: r.qkey, QKeyValid: r.dqp == 1 && r.qkey != 0}
}

// parseRequest reads a request, fills in an "auto" SLID and records it.
func (s *Server) parseRequest(req []byte) request {
	r := request{dlid: be.Uint16(req[0:]), slid: be.Uint16(req[4:]), dqp: be.Uint32(req[8:]), sqp: be.Uint32(req[12:])}
	copy(r.in[:], req[32:])
	pi, _ := s.e.PortInfo(s.opt.Port)
	r.lid, r.mask = pi.LID, uint16(1)<<pi.LMC-1
	if r.slid == 0 && r.dlid != mad.LIDPermissive {
		r.slid = pi.LID // umad2sim's "auto": the client sits on this port
	}
	s.record(r.slid, r.dlid, r.sqp, r.dqp, &r.in)
	return r
}

// route delivers the request: along its directed path through the fabric,
// to this port's engine, or by LID through the switch. It returns the
// response if there is one (ok) and the LID it comes from, or the client
// the request is to be forwarded to (to >= 0). What crosses the switch,
// the request and its response, is counted in the switch's port counters.
func (s *Server) route(sender int, r *request) (out mad.MAD, ok bool, from uint16, to int) {
	from, to = r.lid|r.dlid&r.mask, -1
	dr := r.in.MgmtClass() == mad.ClassSubnDirected
	local := r.dlid&^r.mask == r.lid || r.dlid == mad.LIDPermissive && dr
	f := s.opt.Fabric
	switch {
	case f != nil && dr && local && r.in.HopCount() > 0 && !r.in.Direction():
		if at, x, found := f.directed(&r.in, s.opt.Port); found && r.dqp == 0 {
			f.Switch.Count(x.in, x.out, 1, mad.MADWords, false)
			if out, ok = s.at(at, r, &r.in); ok {
				out[6] = 0 // back at the source: the reverse path is walked
				f.Switch.Count(x.out, x.in, 1, mad.MADWords, false)
			}
		}
	case local && r.dqp <= 1 && mad.SMIRecv(&r.in, s.opt.Port):
		// The SMI steps of a directed-route SMP are the port's, not the SMA's.
		out, ok, to = s.atPort(sender, r)
	case f != nil && !local && r.dqp <= 1:
		at, x, found := s.lidRoute(r.dlid, r.dqp)
		switch {
		case found || x.sent: // crossed (a CA port may have dropped it)
			f.Switch.Count(x.in, x.out, 1, mad.MADWords, false)
		case x.in != 0:
			f.Switch.CountDrop(x.in, x.out, mad.MADWords)
		}
		if !found {
			break
		}
		if out, ok = s.at(at, r, &r.in); ok {
			from = r.dlid
			f.Switch.Count(x.out, x.in, 1, mad.MADWords, false)
		}
	}
	return out, ok, from, to
}

// atPort hands the request to this port's engine. A MAD the engine leaves
// to other agents (Success without a reply) from a client goes to the
// client that registered for it, if any (to >= 0).
func (s *Server) atPort(sender int, r *request) (out mad.MAD, ok bool, to int) {
	wc := r.wc()
	wc.DLIDPathBits = uint8(r.dlid & r.mask)
	resp, res := s.e.ProcessMAD(0, s.opt.Port, &wc, r.grh, &r.in)
	if res&mad.Reply != 0 && mad.SMISend(&resp) {
		out, ok = resp, true
	}
	to = -1
	if res == mad.Success && sender >= 0 {
		// Not the HCA's: the MAD layer hands it to the agent that
		// registered for it, a client of this port.
		to = s.agent(&r.in)
		if to == tunnelSender && sender == tunnelSender && r.in.IsResponse() {
			// A VF's response (an RMPP ACK or ABORT of its MAD layer)
			// is for the agent whose request it answers: the SM's SA.
			to = s.smClient()
		}
	}
	return out, ok, to
}

// writeReply writes the reply over the request: from the port to the
// requester.
func writeReply(req []byte, r *request, from uint16, status uint32, out *mad.MAD) {
	be.PutUint16(req[0:], r.slid)
	req[2], req[3] = 0, 0
	be.PutUint16(req[4:], from)
	req[6], req[7] = 0, 0
	be.PutUint32(req[8:], r.sqp)
	be.PutUint32(req[12:], r.dqp)
	be.PutUint32(req[16:], status)
	be.PutUint64(req[24:], mad.Size)
	copy(req[32:], out[:])
}

// at hands a MAD that reached a node of the fabric to that node's agent and
// returns the response, if there is one to send: the switch's SMA (QP0) or
// PMA (QP1), or a CA port's engine with the request's work completion and
// GRH.
func (s *Server) at(n node, r *request, in *mad.MAD) (mad.MAD, bool) {
	if n.sw {
		var out mad.MAD
		var res mad.Result
		if r.dqp == 0 {
			out, res = s.opt.Fabric.Switch.ProcessSMP(n.port, in)
		} else {
			out, res = s.opt.Fabric.Switch.ProcessGMP(in)
		}
		return out, res&mad.Reply != 0
	}
	e := s.e
	if n.peer != nil {
		e = n.peer
	}
	wc := r.wc()
	out, res := e.ProcessMAD(0, n.port, &wc, r.grh, in)
	if res == mad.Success && n.peer == nil && r.dqp == 1 && in.MgmtClass() == mad.ClassCM && s.opt.Tunnel != nil {
		// Another port of this HCA: its QP1 receives the CM MAD for the
		// PF's tunnel, as this port's would.
		s.opt.Tunnel(n.port, &wc, in)
	}
	return out, res&mad.Reply != 0
}

// lidRoute finds the node a LID-routed MAD from the SM's port reaches: the
// switch (its port 0 LID), or the engine port the switch's linear
// forwarding table sends dlid to. A MAD on QP1 is a data packet: every port
// on the way must be Active (IBA 7.2: Init and Armed ports pass only SMPs);
// an SMP needs the links up. x is the switch ports it entered and left by
// (in 0: it never reached the switch; out 0: port 0, 0xFF: no route; sent:
// out of out, to a CA port that may still drop it).
func (s *Server) lidRoute(dlid uint16, dqp uint32) (n node, x hop, found bool) {
	f := s.opt.Fabric
	sp, ok := f.Cables[s.opt.Port]
	if !ok || dlid == 0 || dlid >= mad.LIDMulticastBase {
		return node{}, x, false
	}
	pass := func(st mad.PortState, phys mad.PhysState) bool {
		return phys == mad.PhysLinkUp && (dqp == 0 || st == mad.PortActive)
	}
	if pi, _ := s.e.PortInfo(s.opt.Port); !pass(pi.PortState, pi.PortPhysicalState) {
		return node{}, x, false
	}
	if pi, _ := f.Switch.PortInfo(int(sp)); !pass(pi.PortState, pi.PortPhysicalState) {
		return node{}, x, false
	}
	x.in = sp
	if dlid == f.Switch.LID() {
		return node{sw: true, port: sp}, x, true
	}
	x.out = f.Switch.Forward(dlid)
	n, pe, ok := f.caPeer(x.out)
	if !ok || pe == nil && n.port == s.opt.Port {
		x.out = 0xFF // nothing there: relayed nowhere
		return node{}, x, false
	}
	if pe == nil {
		pe = s.e
	}
	if spi, _ := f.Switch.PortInfo(int(x.out)); !pass(spi.PortState, spi.PortPhysicalState) {
		return node{}, x, false
	}
	x.sent = true
	pi, err := pe.PortInfo(n.port)
	if err != nil || !pass(pi.PortState, pi.PortPhysicalState) || pi.LID == 0 || dlid&^(uint16(1)<<pi.LMC-1) != pi.LID {
		return node{}, x, false
	}
	return n, x, true
}

// toTunnel hands a client's response for a VF to the tunnel, as the port's
// QP0/QP1 received it.
func (s *Server) toTunnel(req []byte) {
	var m mad.MAD
	copy(m[:], req[32:])
	wc := mad.WC{SLID: be.Uint16(req[4:]), SrcQP: be.Uint32(req[12:]) & 0xffffff, QPN: be.Uint32(req[8:]) & 1}
	s.opt.Tunnel(s.opt.Port, &wc, &m)
}

// TunnelAddr is how a MAD the PF's tunnel sends for a VF leaves the port:
// from QP SQP (0 or 1) with source path bits SLIDBits to DLID's QP DQP, on
// SL, with the port's P_Key index PKeyIndex, Q_Key QKey (0: not known)
// and, if GRH is not nil, that GRH (the VF's own source GID).
type TunnelAddr struct {
	DLID      uint16
	SLIDBits  uint8
	SQP, DQP  uint32
	SL        uint8
	PKeyIndex uint16
	QKey      uint32
	GRH       *mad.GRH
}

// SendTunnel sends a MAD a VF sent through the PF's tunnel, addressed as a
// says, as a client's request is routed (Handle): to the port's own
// agents, along a directed route or by LID through the fabric, or, for a
// MAD the port's agents leave to others (the SA), to the client attached
// as the SM. The agent it reaches gets its work completion (SLID, source
// QP, SL, P_Key index) and GRH. A response given at once is returned with
// the LID it comes from (ok); a forwarded request's response comes back
// through Options.Tunnel. The TID is left as the tunnel set it. It may
// block on the client's socket.
func (s *Server) SendTunnel(a TunnelAddr, in *mad.MAD) (out mad.MAD, from uint16, ok bool) {
	pi, _ := s.e.PortInfo(s.opt.Port)
	r := request{dlid: a.DLID, dqp: a.DQP, sqp: a.SQP, lid: pi.LID, mask: uint16(1)<<pi.LMC - 1, in: *in,
		sl: a.SL, pkeyIndex: a.PKeyIndex, qkey: a.QKey, grh: a.GRH}
	if m := &r.in; m.MgmtClass() == mad.ClassSubnDirected && !m.Direction() && m.HopCount() > 0 && m.HopPointer() == 1 {
		// The sending host's SMI took the source's step (IBA C14-9:1:
		// hop pointer 0 to 1) before the SMP left; the fabric's walk
		// (Fabric.directed) takes it from the source, as for a client's.
		m[6] = 0
	}
	r.slid = r.lid | uint16(a.SLIDBits)&r.mask
	s.record(r.slid, r.dlid, r.sqp, r.dqp, &r.in)
	out, ok, from, to := s.route(tunnelSender, &r)
	if to == tunnelSender { // a VF's response to a VF: back into the tunnel
		s.opt.Tunnel(s.opt.Port, &mad.WC{SLID: r.slid, SrcQP: r.sqp, QPN: r.dqp & 1}, &r.in)
		return out, 0, false
	}
	if to >= 0 {
		var req [requestSize]byte
		putRequest(req[:], r.dlid, r.slid, r.dqp, r.sqp, &r.in)
		if a := s.clientAddr(to); a != nil {
			_, _ = s.out[to].WriteToUnix(req[:], a)
		}
		return out, 0, false
	}
	if ok {
		s.record(from, r.slid, r.dqp, r.sqp, &out)
	}
	return out, from, ok
}

// putRequest writes an unsolicited sim_request of m into req.
func putRequest(req []byte, dlid, slid uint16, dqp, sqp uint32, m *mad.MAD) {
	be.PutUint16(req[0:], dlid)
	be.PutUint16(req[4:], slid)
	be.PutUint32(req[8:], dqp)
	be.PutUint32(req[12:], sqp)
	be.PutUint64(req[24:], mad.Size)
	copy(req[32:], m[:])
}
