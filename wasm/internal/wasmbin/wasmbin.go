package wasmbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// GlobalExportPrefix names the exports Prepare adds: prefix + index.
const GlobalExportPrefix = "pictor_global_"

// Segment is an active data segment of memory 0.
type Segment struct {
	Offset uint32
	Data   []byte
}

// Module is a rewritten binary and what was taken out of it.
type Module struct {
	Binary   []byte
	Segments []Segment
	Globals  int // exported as GlobalExportPrefix + "0" ...
}

const (
	secGlobal    = 6
	secExport    = 7
	secData      = 11
	secDataCount = 12
	secStart     = 8
)

// Prepare rewrites bin. It fails on what a snapshot cannot replace: a
// start section, passive data segments, or offsets that are not
// constants.
func Prepare(bin []byte) (*Module, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:4], []byte("\x00asm")) {
		return nil, errors.New("not a wasm binary")
	}
	out := append([]byte(nil), bin[:8]...)
	m := &Module{}
	r := reader{b: bin, pos: 8}
	sawExport := false
	for r.pos < len(bin) {
		id := r.byte()
		size := r.u32()
		if r.err != nil || r.pos+int(size) > len(bin) {
			return nil, errors.New("truncated section")
		}
		body := bin[r.pos : r.pos+int(size)]
		r.pos += int(size)
		switch id {
		case secStart:
			return nil, errors.New("the module has a start function")
		case secGlobal:
			br := reader{b: body}
			m.Globals = int(br.u32())
			if br.err != nil {
				return nil, br.err
			}
		case secExport:
			sawExport = true
			body = m.exports(body)
			if body == nil {
				return nil, errors.New("bad export section")
			}
		case secData:
			segs, err := dataSegments(body)
			if err != nil {
				return nil, err
			}
			m.Segments = segs
			body = []byte{0} // no segments
		case secDataCount:
			body = []byte{0}
		}
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	if !sawExport {
		return nil, errors.New("the module has no export section")
	}
	m.Binary = out
	return m, nil
}

// exports appends an export of each global to an export section.
func (m *Module) exports(body []byte) []byte {
	r := reader{b: body}
	n := r.u32()
	if r.err != nil {
		return nil
	}
	out := binary.AppendUvarint(nil, uint64(n)+uint64(m.Globals))
	out = append(out, body[r.pos:]...)
	for i := 0; i < m.Globals; i++ {
		name := GlobalExportPrefix + strconv.Itoa(i)
		out = binary.AppendUvarint(out, uint64(len(name)))
		out = append(out, name...)
		out = append(out, 0x03) // global
		out = binary.AppendUvarint(out, uint64(i))
	}
	return out
}

func dataSegments(body []byte) ([]Segment, error) {
	r := reader{b: body}
	n := r.u32()
	segs := make([]Segment, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		switch flags := r.u32(); flags {
		case 0: // active, memory 0, offset expression
		case 2: // active, explicit memory index
			if r.u32() != 0 {
				return nil, errors.New("data segment for a memory other than 0")
			}
		default:
			return nil, fmt.Errorf("data segment %d is passive", i)
		}
		if r.byte() != 0x41 { // i32.const
			return nil, fmt.Errorf("data segment %d: offset is not a constant", i)
		}
		off := r.s32()
		if r.byte() != 0x0b { // end
			return nil, fmt.Errorf("data segment %d: offset is not a constant", i)
		}
		size := r.u32()
		if r.err != nil || r.pos+int(size) > len(body) {
			return nil, errors.New("truncated data segment")
		}
		segs = append(segs, Segment{Offset: uint32(off), Data: body[r.pos : r.pos+int(size)]})
		r.pos += int(size)
	}
	if r.err != nil {
		return nil, r.err
	}
	return segs, nil
}

type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) byte() byte {
	if r.pos >= len(r.b) {
		r.err = errors.New("truncated")
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *reader) u32() uint32 {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return uint32(v)
		}
	}
	r.err = errors.New("bad LEB128")
	return 0
}

func (r *reader) s32() int32 {
	var v int64
	shift := 0
	for {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return int32(v)
		}
		if shift >= 35 {
			r.err = errors.New("bad LEB128")
			return 0
		}
	}
}
