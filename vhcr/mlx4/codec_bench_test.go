package mlx4

import "testing"

var sinkQP QPMailbox

// The codecs run on the command hot path: no allocation for input that
// holds the structure.
func TestCodecAllocs(t *testing.T) {
	var mb [MailboxSize]byte
	QPMailbox{Ctx: QPContext{ST: QP_ST_RC, LogSQSize: 3, MTTBase: 64}}.Encode(mb[:])
	for name, f := range map[string]func(){
		"DecodeQPMailbox":  func() { sinkQP, _ = DecodeQPMailbox(mb[:]) },
		"QPMailbox.Encode": func() { sinkQP.Encode(mb[:]) },
		"MTTPages":         func() { _ = sinkQP.Ctx.MTTPages() },
		"DecodeCQContext":  func() { c, _ := DecodeCQContext(mb[:]); c.Encode(mb[:]) },
		"DecodeSRQContext": func() { c, _ := DecodeSRQContext(mb[:]); c.Encode(mb[:]) },
		"DecodeEQContext":  func() { c, _ := DecodeEQContext(mb[:]); c.Encode(mb[:]) },
		"DecodeMPT":        func() { m, _ := DecodeMPT(mb[:]); m.Encode(mb[:]) },
		"DecodeAccessRegPTYS": func() {
			_, p := DecodeAccessRegPTYS(&mb)
			p.Encode(mb[ACCESS_REG_HEADER_SIZE:])
		},
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

func BenchmarkDecodeQPMailbox(b *testing.B) {
	var mb [MailboxSize]byte
	QPMailbox{Ctx: QPContext{ST: QP_ST_RC, LogSQSize: 3, MTTBase: 64}}.Encode(mb[:])
	b.ReportAllocs()
	for b.Loop() {
		sinkQP, _ = DecodeQPMailbox(mb[:])
	}
}

func BenchmarkEncodeQPMailbox(b *testing.B) {
	var mb [MailboxSize]byte
	m := QPMailbox{Ctx: QPContext{ST: QP_ST_RC, LogSQSize: 3, MTTBase: 64}}
	b.ReportAllocs()
	for b.Loop() {
		m.Encode(mb[:])
	}
}

func BenchmarkDecodeCQContext(b *testing.B) {
	var mb [MailboxSize]byte
	CQContext{LogSize: 7, CompEQN: 1, MTTBase: 64}.Encode(mb[:])
	b.ReportAllocs()
	var n int
	for b.Loop() {
		c, _ := DecodeCQContext(mb[:])
		n += c.MTTPages()
	}
	_ = n
}

// BenchmarkDecodeSendWQE is the engine's decode of a one-SGE RC SEND into
// the value it reuses (SendWQE.Decode), alternating with a UD SEND every
// other op in the "after-ud" case so that the datagram segment is cleared
// each time.
func BenchmarkDecodeSendWQE(b *testing.B) {
	var rc, ud [128]byte
	if _, err := EncodeSendWQE(rc[:], &SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_SEND, SrcRBFlags: WQE_CTRL_CQ_UPDATE}, NSGE: 1,
		SGE: [MaxSGE]Gather{{ByteCount: 64, LKey: 0x1234, Addr: 0x1000}}}, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := EncodeSendWQE(ud[:], &SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_SEND}, HasDatagram: true, NSGE: 1,
		SGE: [MaxSGE]Gather{{ByteCount: 64, LKey: 0x1234, Addr: 0x1000}}}, nil); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		other []byte
		st    uint8
	}{{"rc", rc[:], QP_ST_RC}, {"after-ud", ud[:], QP_ST_UD}} {
		b.Run(c.name, func(b *testing.B) {
			var w SendWQE
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				in, st := rc[:], uint8(QP_ST_RC)
				if i++; i&1 == 0 {
					in, st = c.other, c.st
				}
				if w.Decode(in, st) != nil {
					b.Fatal("decode")
				}
			}
		})
	}
}
