package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"time"
)

// Randomness and stable derived values.

func (g *generator) lognormal(median time.Duration, sigma float64) int64 {
	return int64(float64(median) * math.Exp(sigma*g.rng.NormFloat64()))
}

// uuid is a random version 4 UUID.
func (g *generator) uuid() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], g.rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], g.rng.Uint64())
	return formatUUID(b)
}

func formatUUID(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// hash is a stable hash of the seed and parts (FNV-1a).
func (g *generator) hash(parts ...string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, c := range g.seedTag {
		h = (h ^ uint64(c)) * prime
	}
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			h = (h ^ uint64(p[i])) * prime
		}
		h *= prime // separator: a zero byte
	}
	return h
}

func (g *generator) sum(parts ...string) [32]byte {
	h := sha256.New()
	h.Write(g.seedTag[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// uid is the object's stable UID: the same for the same parts and seed.
func (g *generator) uid(parts ...string) string {
	s := g.sum(append([]string{"uid"}, parts...)...)
	return formatUUID([16]byte(s[:16]))
}

// hexOf is n (at most 64) stable hex digits.
func (g *generator) hexOf(n int, parts ...string) string {
	s := g.sum(parts...)
	return hex.EncodeToString(s[:])[:n]
}

func (g *generator) digest(image string) string { return g.hexOf(64, "image", image) }

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789" // k8s.io/apimachinery/pkg/util/rand

// suffix is a stable five-character name suffix, like a generated name's.
func (g *generator) suffix(parts ...string) string {
	h := g.hash(parts...)
	var b [5]byte
	for i := range b {
		b[i] = suffixAlphabet[h%uint64(len(suffixAlphabet))]
		h /= uint64(len(suffixAlphabet))
	}
	return string(b[:])
}

func (g *generator) randSuffix() string {
	var b [5]byte
	for i := range b {
		b[i] = suffixAlphabet[g.rng.IntN(len(suffixAlphabet))]
	}
	return string(b[:])
}

func rfc3339(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }

func microString(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}
