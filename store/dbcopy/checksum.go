package dbcopy

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// checksum sums the sha256 of every row (its first 128 bits, modulo 2^128): the order rows are
// read in does not matter, and a missing, extra or changed row changes it.
type checksum struct {
	hi, lo uint64
	rows   int64
	buf    []byte
}

// add folds one row in. Values are canonical before hashing, so both backends' forms of one
// value agree: integers and booleans as int64 (SQLite stores booleans as 0/1), text as valid
// UTF-8 with NUL as U+FFFD (PostgreSQL text cannot hold NUL; store/postgres writes U+FFFD).
func (c *checksum) add(vals []any) error {
	b := c.buf[:0]
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			b = append(b, 'n')
		case bool:
			n := int64(0)
			if x {
				n = 1
			}
			b = binary.BigEndian.AppendUint64(append(b, 'i'), uint64(n))
		case int64:
			b = binary.BigEndian.AppendUint64(append(b, 'i'), uint64(x))
		case int32:
			b = binary.BigEndian.AppendUint64(append(b, 'i'), uint64(int64(x)))
		case int:
			b = binary.BigEndian.AppendUint64(append(b, 'i'), uint64(int64(x)))
		case float64:
			b = binary.BigEndian.AppendUint64(append(b, 'f'), math.Float64bits(x))
		case string:
			s := CleanText(x)
			b = binary.BigEndian.AppendUint64(append(b, 's'), uint64(len(s)))
			b = append(b, s...)
		case []byte:
			b = binary.BigEndian.AppendUint64(append(b, 'b'), uint64(len(x)))
			b = append(b, x...)
		default:
			return fmt.Errorf("%w: %T", ErrUnsupported, v)
		}
	}
	c.buf = b
	h := sha256.Sum256(b)
	var carry uint64
	c.lo, carry = bits.Add64(c.lo, binary.BigEndian.Uint64(h[8:16]), 0)
	c.hi, _ = bits.Add64(c.hi, binary.BigEndian.Uint64(h[0:8]), carry)
	c.rows++
	return nil
}

func (c *checksum) String() string { return fmt.Sprintf("%016x%016x", c.hi, c.lo) }

// CleanText is text as every backend can hold it: valid UTF-8, NUL as U+FFFD. A target writes
// text through it.
func CleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}
