package bar

// Atomic operations on the native-order shared words Word returns
// (doorbells, sleep flags in a mapped region): WordLoad, WordStore (a
// sequentially consistent store) and WordAdd (returns the new value). They
// are sync/atomic's, except in race builds on amd64, where they are the
// same instructions in assembly: sync/atomic under the race detector
// performs the access in the detector's C code on the system stack, where
// a fault of a region that shrank under the PF is fatal instead of the
// panic Guard recovers (access_race_amd64.go).
