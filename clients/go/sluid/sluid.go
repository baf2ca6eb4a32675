// Package sluid mints and parses SLUIDs as Sluice does (docs/wire-format.md, "SLUIDs"):
// 12-bit cluster id, 42-bit Unix time in ms, 10-bit sequence; "s" + 13 Crockford Base32
// characters.
package sluid

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"
)

// Alphabet is Crockford's Base32, upper case.
const Alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

const (
	ClusterIDMin = 2
	ClusterIDMax = 4094
	SequenceMax  = 1023
	timeMax      = 1<<42 - 1
)

// Clock is the minting state: the cluster id, the last millisecond used and its sequence.
type Clock struct {
	ClusterID int
	LastMs    int64
	Sequence  int
}

// NewClock is a clock that has minted nothing yet.
func NewClock(clusterID int) (Clock, error) {
	if clusterID < ClusterIDMin || clusterID > ClusterIDMax {
		return Clock{}, fmt.Errorf("cluster id %d is outside %d..%d", clusterID, ClusterIDMin, ClusterIDMax)
	}
	return Clock{ClusterID: clusterID, Sequence: -1}, nil
}

// Compose packs the three fields.
func Compose(clusterID int, unixMs int64, sequence int) (uint64, error) {
	if clusterID < 0 || clusterID > 0xFFF || unixMs < 0 || unixMs > timeMax || sequence < 0 || sequence > SequenceMax {
		return 0, fmt.Errorf("cluster %d, time %d, sequence %d do not fit 12/42/10 bits", clusterID, unixMs, sequence)
	}
	return uint64(clusterID)<<52 | uint64(unixMs)<<10 | uint64(sequence), nil
}

// Mint returns the next id and clock: a new millisecond starts at firstSequence; the same (or
// an earlier) millisecond counts on; past 1023 the next millisecond is borrowed.
func Mint(clock Clock, nowMs int64, firstSequence int) (uint64, Clock, error) {
	ms, seq := nowMs, firstSequence
	switch {
	case nowMs > clock.LastMs:
	case clock.Sequence < SequenceMax:
		ms, seq = clock.LastMs, clock.Sequence+1
	default:
		ms, seq = clock.LastMs+1, 0
	}
	value, err := Compose(clock.ClusterID, ms, seq)
	return value, Clock{clock.ClusterID, ms, seq}, err
}

// Format gives the text form.
func Format(value uint64) string {
	var b strings.Builder
	b.WriteByte('s')
	for shift := 60; shift >= 0; shift -= 5 {
		b.WriteByte(Alphabet[(value>>uint(shift))&0x1F])
	}
	return b.String()
}

// Parse reads the text form; it accepts s/S, lower case and Crockford's O=0, I=L=1.
func Parse(text string) (uint64, error) {
	if len(text) != 14 || (text[0] != 's' && text[0] != 'S') {
		return 0, fmt.Errorf("%q is not a SLUID: expected 's' and 13 characters", text)
	}
	var value uint64
	for i := 1; i < 14; i++ {
		c := strings.ToUpper(text[i : i+1])
		switch c {
		case "O":
			c = "0"
		case "I", "L":
			c = "1"
		}
		digit := strings.Index(Alphabet, c)
		if digit < 0 || (i == 1 && digit > 0xF) {
			return 0, fmt.Errorf("%q is not a SLUID: bad character %q", text, text[i])
		}
		value = value<<5 | uint64(digit)
	}
	if value == 0 {
		return 0, fmt.Errorf("%q is not a SLUID: zero", text)
	}
	return value, nil
}

// Generator mints from the wall clock; each new millisecond starts at a random sequence in
// the lower half, so two processes minting in one millisecond rarely collide.
type Generator struct {
	mu    sync.Mutex
	clock Clock
}

// NewGenerator is a generator for a cluster id.
func NewGenerator(clusterID int) (*Generator, error) {
	clock, err := NewClock(clusterID)
	return &Generator{clock: clock}, err
}

// Next is a new SLUID in text form.
func (g *Generator) Next() string {
	first, err := rand.Int(rand.Reader, big.NewInt(512))
	if err != nil {
		panic(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	value, clock, err := Mint(g.clock, time.Now().UnixMilli(), int(first.Int64()))
	if err != nil {
		panic(err) // only past the year 2109
	}
	g.clock = clock
	return Format(value)
}
