package hbs

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Values in binary: ParseValues's result as the sandbox's host hands it
// to the guest, so that the guest does not scan JSON text a byte at a
// time (each step of a loop is costly in the guest). Keys are already in
// JavaScript's order and repeated keys merged; strings are a length and
// their bytes, valid UTF-8, marked when they hold nothing
// escapeExpression replaces. The header counts the arrays, objects and
// their members, so that DecodeValues allocates each kind once.
//
// Layout: uvarints nArrays, nObjects, nMembers (elements and
// properties), then the root value: a tag and its fields.
const (
	vtagNull byte = iota + 1
	vtagFalse
	vtagTrue
	vtagNumber      // 8 bytes, IEEE 754 little-endian, then its JavaScript string (uvarint length, bytes)
	vtagString      // uvarint length, bytes
	vtagPlainString // the same, with nothing to escape
	vtagArray       // uvarint n, n values
	vtagObject      // uvarint n, n × (key as uvarint length and bytes, value)
)

// EncodeValues appends v in binary to b.
func EncodeValues(b []byte, v Value) []byte {
	var nArr, nObj, nMem uint64
	var count func(Value)
	count = func(v Value) {
		switch v.kind {
		case Array:
			nArr++
			nMem += uint64(len(v.arr.elems))
			for _, e := range v.arr.elems {
				count(e)
			}
		case Object, nullContext:
			nObj++
			nMem += uint64(len(v.obj.keys))
			for _, e := range v.obj.vals {
				count(e)
			}
		}
	}
	count(v)
	b = binary.AppendUvarint(b, nArr)
	b = binary.AppendUvarint(b, nObj)
	b = binary.AppendUvarint(b, nMem)
	return encodeValue(b, v)
}

func encodeValue(b []byte, v Value) []byte {
	switch v.kind {
	case Null, Undefined:
		return append(b, vtagNull)
	case Bool:
		if v.num != 0 {
			return append(b, vtagTrue)
		}
		return append(b, vtagFalse)
	case Number:
		b = binary.LittleEndian.AppendUint64(append(b, vtagNumber), math.Float64bits(v.num))
		return encodeString(b, formatNumber(v.num))
	case String:
		tag := vtagPlainString
		for i := 0; i < len(v.str); i++ {
			if escapes[v.str[i]] != "" {
				tag = vtagString
				break
			}
		}
		return encodeString(append(b, tag), v.str)
	case Array:
		b = binary.AppendUvarint(append(b, vtagArray), uint64(len(v.arr.elems)))
		for _, e := range v.arr.elems {
			b = encodeValue(b, e)
		}
		return b
	}
	b = binary.AppendUvarint(append(b, vtagObject), uint64(len(v.obj.keys)))
	for i, k := range v.obj.keys {
		b = encodeString(b, k)
		b = encodeValue(b, v.obj.vals[i])
	}
	return b
}

// DecodeValues decodes EncodeValues's output. Its strings point into
// b, which must not change afterwards. Malformed input is ErrValues,
// nesting deeper than maxDepth ErrTooDeep.
func DecodeValues(b []byte, maxDepth int) (Value, error) {
	d := &valuesDecoder{progDecoder: progDecoder{b: b, maxDepth: maxDepth}}
	nArr, nObj, nMem := d.count(), d.count(), d.count()
	if d.err != nil {
		return undefined, fmt.Errorf("%w: %w", ErrValues, d.err)
	}
	d.arrays = make([]array, nArr)
	d.objects = make([]object, nObj)
	d.members = make([]Value, nMem)
	d.keys = make([]string, nMem)
	if d.pos >= len(b) || b[d.pos] != vtagObject {
		return undefined, ErrValues
	}
	v := d.value(0)
	switch {
	case d.tooDeep:
		return undefined, fmt.Errorf("%w: values nest deeper than %d", ErrTooDeep, maxDepth)
	case d.err != nil:
		return undefined, fmt.Errorf("%w: %w", ErrValues, d.err)
	case d.pos != len(b):
		return undefined, fmt.Errorf("%w: %d bytes after the values", ErrValues, len(b)-d.pos)
	}
	return v, nil
}

type valuesDecoder struct {
	progDecoder
	tooDeep bool
	arrays  []array
	objects []object
	members []Value
	keys    []string
}

// take returns the next n members (and keys) of the slabs.
func (d *valuesDecoder) take(n int) ([]Value, []string) {
	if n > len(d.members) {
		d.fail("more members than counted")
		return nil, nil
	}
	vals, keys := d.members[:n:n], d.keys[:n:n]
	d.members, d.keys = d.members[n:], d.keys[n:]
	return vals, keys
}

func (d *valuesDecoder) value(depth int) Value {
	switch tag := d.byte(); tag {
	case vtagNull:
		return null
	case vtagFalse:
		return falseValue
	case vtagTrue:
		return trueValue
	case vtagNumber:
		if len(d.b)-d.pos < 8 {
			d.fail("truncated number")
			return undefined
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.pos:]))
		d.pos += 8
		d.string() // for the C evaluator
		return numberValue(f)
	case vtagString:
		return stringValue(d.string())
	case vtagPlainString:
		return Value{kind: String, str: d.string(), num: plainString}
	case vtagArray, vtagObject:
		if depth >= d.maxDepth {
			d.tooDeep = true
			d.fail("too deep")
			return undefined
		}
		n := d.count()
		vals, keys := d.take(n)
		if d.err != nil {
			return undefined
		}
		if tag == vtagArray {
			if len(d.arrays) == 0 {
				d.fail("more arrays than counted")
				return undefined
			}
			a := &d.arrays[0]
			d.arrays = d.arrays[1:]
			for i := range vals {
				vals[i] = d.value(depth + 1)
			}
			a.elems = vals
			return Value{kind: Array, arr: a}
		}
		if len(d.objects) == 0 {
			d.fail("more objects than counted")
			return undefined
		}
		o := &d.objects[0]
		d.objects = d.objects[1:]
		for i := range vals {
			keys[i] = d.string()
			vals[i] = d.value(depth + 1)
		}
		o.keys, o.vals = keys, vals
		if len(keys) > objectIndexAt {
			o.index = make(map[string]int, len(keys))
			for i, k := range keys {
				if _, dup := o.index[k]; dup {
					d.fail("repeated key")
				}
				o.index[k] = i
			}
		}
		return Value{kind: Object, obj: o}
	}
	d.fail("bad value tag")
	return undefined
}

// plainString in a String Value's num: the string has nothing to
// escape (set by DecodeValues, from the host's scan).
const plainString = 1
