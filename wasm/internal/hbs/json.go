package hbs

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrValues reports values that are not a JSON object.
var ErrValues = errors.New("values are not a JSON object")

// ParseValues decodes a template's values as JSON.parse does: key order
// kept, a repeated key's last value in its first place, numbers as
// float64 (out of range ones as ±Infinity), invalid UTF-8 and lone
// surrogates as U+FFFD. The top level must be an object; empty input is
// the empty object. Nesting deeper than maxDepth is ErrTooDeep.
func ParseValues(data []byte, maxDepth int) (Value, error) {
	d := decoder{data: data, maxDepth: maxDepth}
	d.skipSpace()
	if d.pos == len(d.data) {
		return Value{kind: Object, obj: &object{}}, nil
	}
	if d.data[d.pos] != '{' {
		return undefined, ErrValues
	}
	v, err := d.value(0)
	if err != nil {
		return undefined, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return undefined, d.errorf("unexpected %q after the object", d.data[d.pos])
	}
	return v, nil
}

type decoder struct {
	data     []byte
	pos      int
	maxDepth int
	buf      []byte
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrValues, d.pos, fmt.Sprintf(format, args...))
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (Value, error) {
	d.skipSpace()
	if d.pos == len(d.data) {
		return undefined, d.errorf("unexpected end")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		if depth >= d.maxDepth {
			return undefined, fmt.Errorf("%w: values nest deeper than %d", ErrTooDeep, d.maxDepth)
		}
		d.pos++
		o := &object{}
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == '}' {
			d.pos++
			return Value{kind: Object, obj: o}, nil
		}
		for {
			d.skipSpace()
			if d.pos == len(d.data) || d.data[d.pos] != '"' {
				return undefined, d.errorf("expected a string key")
			}
			k, err := d.string()
			if err != nil {
				return undefined, err
			}
			d.skipSpace()
			if d.pos == len(d.data) || d.data[d.pos] != ':' {
				return undefined, d.errorf("expected ':'")
			}
			d.pos++
			v, err := d.value(depth + 1)
			if err != nil {
				return undefined, err
			}
			o.set(k, v)
			d.skipSpace()
			if d.pos == len(d.data) {
				return undefined, d.errorf("unexpected end")
			}
			if d.data[d.pos] == ',' {
				d.pos++
				continue
			}
			if d.data[d.pos] == '}' {
				d.pos++
				o.order()
				return Value{kind: Object, obj: o}, nil
			}
			return undefined, d.errorf("expected ',' or '}'")
		}
	case c == '[':
		if depth >= d.maxDepth {
			return undefined, fmt.Errorf("%w: values nest deeper than %d", ErrTooDeep, d.maxDepth)
		}
		d.pos++
		a := &array{}
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == ']' {
			d.pos++
			return Value{kind: Array, arr: a}, nil
		}
		for {
			v, err := d.value(depth + 1)
			if err != nil {
				return undefined, err
			}
			a.elems = append(a.elems, v)
			d.skipSpace()
			if d.pos == len(d.data) {
				return undefined, d.errorf("unexpected end")
			}
			if d.data[d.pos] == ',' {
				d.pos++
				continue
			}
			if d.data[d.pos] == ']' {
				d.pos++
				return Value{kind: Array, arr: a}, nil
			}
			return undefined, d.errorf("expected ',' or ']'")
		}
	case c == '"':
		s, err := d.string()
		if err != nil {
			return undefined, err
		}
		return stringValue(s), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	default:
		for _, lit := range [...]struct {
			s string
			v Value
		}{{"true", trueValue}, {"false", falseValue}, {"null", null}} {
			if len(d.data)-d.pos >= len(lit.s) && string(d.data[d.pos:d.pos+len(lit.s)]) == lit.s {
				d.pos += len(lit.s)
				return lit.v, nil
			}
		}
		return undefined, d.errorf("unexpected %q", c)
	}
}

func (d *decoder) number() (Value, error) {
	start := d.pos
	if d.data[d.pos] == '-' {
		d.pos++
	}
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.pos < len(d.data) && d.data[d.pos] == '0' {
		d.pos++
	} else if digits() == 0 {
		return undefined, d.errorf("invalid number")
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return undefined, d.errorf("invalid number")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return undefined, d.errorf("invalid number")
		}
	}
	f, err := strconv.ParseFloat(string(d.data[start:d.pos]), 64)
	if err != nil && !isRangeErr(err) {
		return undefined, d.errorf("invalid number")
	}
	return numberValue(f), nil
}

// string decodes a JSON string at d.pos (the opening quote).
func (d *decoder) string() (string, error) {
	d.pos++
	start := d.pos
	// Fast path: no escapes, valid UTF-8.
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s := d.data[start:d.pos]
			if utf8.Valid(s) {
				d.pos++
				return string(s), nil
			}
			break
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
		d.pos++
	}
	b := append(d.buf[:0], d.data[start:d.pos]...)
	for {
		if d.pos == len(d.data) {
			return "", d.errorf("unterminated string")
		}
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			d.buf = b
			return string(b), nil
		case c < 0x20:
			return "", d.errorf("control character in string")
		case c == '\\':
			d.pos++
			if d.pos == len(d.data) {
				return "", d.errorf("unterminated string")
			}
			e := d.data[d.pos]
			d.pos++
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.errorf("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if r < 0xdc00 && d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
						save := d.pos
						d.pos += 2
						if lo, ok := d.hex4(); ok && lo >= 0xdc00 && lo <= 0xdfff {
							r2 = utf16.DecodeRune(r, lo)
						} else {
							d.pos = save
						}
					}
					r = r2
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", d.errorf("invalid escape")
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			b = utf8.AppendRune(b, r)
			d.pos += size
		}
	}
}

func (d *decoder) hex4() (rune, bool) {
	if len(d.data)-d.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		v := digitVal(rune(c))
		if v >= 16 {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	d.pos += 4
	return r, true
}
