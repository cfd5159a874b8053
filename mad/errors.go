package mad

import "errors"

// Sentinel errors. Decoders and Validate wrap them with %w and a description
// of the offending field, so callers test with errors.Is.
var (
	// ErrShort reports input shorter than the structure it must hold.
	ErrShort = errors.New("mad: input too short")
	// ErrSize reports input whose length must be exact and is not (a MAD
	// that is not 256 bytes).
	ErrSize = errors.New("mad: wrong size")
	// ErrVersion reports an unsupported base or class version.
	ErrVersion = errors.New("mad: unsupported version")
	// ErrClass reports a management class that does not fit the decoder.
	ErrClass = errors.New("mad: wrong management class")
	// ErrHops reports a directed-route hop count or hop pointer out of range.
	ErrHops = errors.New("mad: directed-route hops out of range")
	// ErrInvalid reports a field whose value is reserved or inconsistent with
	// another field.
	ErrInvalid = errors.New("mad: invalid field value")
	// ErrConfig reports an invalid engine configuration.
	ErrConfig = errors.New("mad: invalid configuration")
)
