package pfstate

import "hash/crc32"

// Table is the module's one CRC32C (Castagnoli) table: every check word of
// the state file and of the channel record is CRC32C.
var Table = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, Table) }

// Update adds b to the CRC32C crc.
func Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, Table, b) }
