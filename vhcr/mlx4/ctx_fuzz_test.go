package mlx4

import "testing"

func isPow2(n int) bool { return n >= 1 && n&(n-1) == 0 }

// roundTrip decodes in, encodes the result, decodes again and wants the
// same value: the decoded form is a fixed point of the codec. size is the
// structure's length; shorter input must be ErrShort.
func roundTrip[T comparable](t *testing.T, in []byte, size int, dec func([]byte) (T, error), enc func(T, []byte)) T {
	t.Helper()
	v, err := dec(in)
	if len(in) < size {
		if err == nil {
			t.Fatalf("%d bytes decoded without ErrShort", len(in))
		}
		var zero T
		return zero
	}
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	enc(v, b)
	w, err := dec(b)
	if err != nil {
		t.Fatal(err)
	}
	// A second pass must be stable (Encode normalises what it cannot keep).
	enc(w, b)
	if x, _ := dec(b); x != w {
		t.Fatalf("unstable round trip:\n%+v\n%+v", w, x)
	}
	return v
}

// FuzzDecodeContexts: every bit pattern decodes as each context, and the MTT
// sizes derived from VF-controlled exponents are powers of two within the
// clamp.
func FuzzDecodeContexts(f *testing.F) {
	f.Add(make([]byte, QPMailboxSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		var mb [MailboxSize]byte
		copy(mb[:], data)
		q, _ := DecodeQPMailbox(mb[:])
		if !isPow2(q.Ctx.MTTPages()) || q.Ctx.Pri.Port < 1 || q.Ctx.Pri.Port > 2 || q.Ctx.CQNSend > 0xffffff || q.Ctx.SRQN > 0xffffff {
			t.Fatalf("QP context %+v", q)
		}
		cq, _ := DecodeCQContext(mb[:])
		srq, _ := DecodeSRQContext(mb[:])
		eq, _ := DecodeEQContext(mb[:])
		for _, n := range []int{cq.MTTPages(), srq.MTTPages(), eq.MTTPages()} {
			if !isPow2(n) || n > 1<<MaxSizeExponent {
				t.Fatalf("MTT size %d", n)
			}
		}
		m, _ := DecodeMPT(mb[:])
		if m.PDSlave() > 0x7f || m.MTTBase > 0xffffffff/MTTEntrySize {
			t.Fatalf("MPT %+v", m)
		}
	})
}

func FuzzQPMailbox(f *testing.F) {
	b := make([]byte, QPMailboxSize)
	QPMailbox{OptPar: QP_OPTPAR_PRIMARY_ADDR_PATH, Ctx: QPContext{ST: QP_ST_UD, CQNSend: 5, CQNRecv: 6,
		UseSRQ: true, SRQN: 7, Pri: QPPath{Port: 2, PKeyIndex: 1}, LogSQSize: 3, LogSQStride: 2, MTTBase: 64}}.Encode(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		roundTrip(t, in, QPMailboxSize, DecodeQPMailbox, QPMailbox.Encode)
	})
}

func FuzzCQContext(f *testing.F) {
	b := make([]byte, CQContextSize)
	CQContext{LogSize: 7, CompEQN: 1, MTTBase: 64}.Encode(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		c := roundTrip(t, in, CQContextSize, DecodeCQContext, CQContext.Encode)
		if n := c.MTTPages(); !isPow2(n) || n > 1<<MaxSizeExponent {
			t.Fatalf("MTT size %d", n)
		}
	})
}

func FuzzSRQContext(f *testing.F) {
	b := make([]byte, SRQContextSize)
	SRQContext{SRQN: 3, LogSize: 4, LogStride: 2, MTTBase: 64}.Encode(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		c := roundTrip(t, in, SRQContextSize, DecodeSRQContext, SRQContext.Encode)
		if n := c.MTTPages(); !isPow2(n) || n > 1<<MaxSizeExponent {
			t.Fatalf("MTT size %d", n)
		}
	})
}

func FuzzEQContext(f *testing.F) {
	b := make([]byte, EQContextSize)
	EQContext{LogSize: 4, MTTBase: 64}.Encode(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		c := roundTrip(t, in, EQContextSize, DecodeEQContext, EQContext.Encode)
		if n := c.MTTPages(); !isPow2(n) || n > 1<<MaxSizeExponent {
			t.Fatalf("MTT size %d", n)
		}
	})
}

func FuzzMPT(f *testing.F) {
	b := make([]byte, MPTEntrySize)
	MPT{Access: PERM_LOCAL_READ, PD: 2, MTTBase: 64, MTTSize: 4}.Encode(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		m := roundTrip(t, in, MPTEntrySize, DecodeMPT, MPT.Encode)
		if m.PDSlave() > 0x7f || m.MTTBase > 0xffffffff/MTTEntrySize {
			t.Fatalf("MPT %+v", m)
		}
	})
}

// FuzzDecodeAccessRegPTYS: every outbox decodes, and the register is a
// fixed point of its codec.
func FuzzDecodeAccessRegPTYS(f *testing.F) {
	var in [MailboxSize]byte
	EncodeAccessRegPTYS(&in, ACCESS_REG_QUERY, 1, PTYS_IB)
	f.Add(in[:ACCESS_REG_HEADER_SIZE+PTYSRegSize])
	f.Fuzz(func(t *testing.T, b []byte) {
		var out [MailboxSize]byte
		copy(out[:], b)
		st, p := DecodeAccessRegPTYS(&out)
		if st > ACCESS_REG_STATUS_MASK {
			t.Fatalf("status %#x", st)
		}
		roundTrip(t, out[ACCESS_REG_HEADER_SIZE:], PTYSRegSize, DecodePTYS, PTYS.Encode)
		if q, _ := DecodePTYS(out[ACCESS_REG_HEADER_SIZE:]); q != p {
			t.Fatalf("%+v != %+v", q, p)
		}
	})
}
