package hbs

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the JavaScript type of a Value.
type Kind uint8

// The kinds of values a template sees: those of JSON, JavaScript's
// undefined (a missing property) and handlebars.js's nullContext, the
// empty object helpers get as `this` when the context is null.
const (
	Undefined Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
	nullContext
)

// Value is a JSON value as JavaScript sees it. Arrays and objects are
// pointers, so that identity (handlebars.js compares contexts with !=)
// is kept.
type Value struct {
	kind Kind
	num  float64 // Number, and Bool as 0 or 1
	str  string
	arr  *array
	obj  *object
}

type array struct{ elems []Value }

// object keeps JavaScript's property order: keys that are array indices
// first, ascending, then the others in insertion order (what
// Object.keys returns for a JSON.parse result).
type object struct {
	keys  []string
	vals  []Value
	index map[string]int // built once the object is large
}

var (
	undefined  = Value{}
	null       = Value{kind: Null}
	trueValue  = Value{kind: Bool, num: 1}
	falseValue = Value{kind: Bool}
	// nullCtx is handlebars.js's container.nullContext (Object.seal({})).
	nullCtx = Value{kind: nullContext, obj: &object{}}
)

func boolValue(b bool) Value {
	if b {
		return trueValue
	}
	return falseValue
}

func numberValue(f float64) Value { return Value{kind: Number, num: f} }
func stringValue(s string) Value  { return Value{kind: String, str: s} }

// Kind returns v's kind.
func (v Value) Kind() Kind { return v.kind }

func (o *object) get(key string) (Value, bool) {
	if o.index != nil {
		i, ok := o.index[key]
		if !ok {
			return undefined, false
		}
		return o.vals[i], true
	}
	for i, k := range o.keys {
		if k == key {
			return o.vals[i], true
		}
	}
	return undefined, false
}

const objectIndexAt = 12

// set adds key or replaces its value in place, as JSON.parse does with
// a repeated key.
func (o *object) set(key string, v Value) {
	if o.index != nil {
		if i, ok := o.index[key]; ok {
			o.vals[i] = v
			return
		}
	} else {
		for i, k := range o.keys {
			if k == key {
				o.vals[i] = v
				return
			}
		}
	}
	o.keys = append(o.keys, key)
	o.vals = append(o.vals, v)
	if o.index != nil {
		o.index[key] = len(o.keys) - 1
	} else if len(o.keys) > objectIndexAt {
		o.index = make(map[string]int, len(o.keys)*2)
		for i, k := range o.keys {
			o.index[k] = i
		}
	}
}

// order sorts the keys into JavaScript's own-property order: integer
// keys ascending first. Called once the object is complete.
func (o *object) order() {
	n := 0
	for _, k := range o.keys {
		if _, ok := arrayIndex(k); ok {
			n++
		}
	}
	if n == 0 {
		return
	}
	keys := make([]string, 0, len(o.keys))
	vals := make([]Value, 0, len(o.vals))
	idx := make([]int, 0, n)
	for i, k := range o.keys {
		if _, ok := arrayIndex(k); ok {
			idx = append(idx, i)
		}
	}
	// insertion sort by numeric value: objects are small
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0; j-- {
			a, _ := arrayIndex(o.keys[idx[j-1]])
			b, _ := arrayIndex(o.keys[idx[j]])
			if a <= b {
				break
			}
			idx[j-1], idx[j] = idx[j], idx[j-1]
		}
	}
	for _, i := range idx {
		keys = append(keys, o.keys[i])
		vals = append(vals, o.vals[i])
	}
	for i, k := range o.keys {
		if _, ok := arrayIndex(k); !ok {
			keys = append(keys, k)
			vals = append(vals, o.vals[i])
		}
	}
	o.keys, o.vals = keys, vals
	if o.index != nil {
		for i, k := range o.keys {
			o.index[k] = i
		}
	}
}

// arrayIndex reports whether s is a canonical array index ("0", "17",
// not "01" or "-1"), below 2^32-1 as ECMAScript defines it.
func arrayIndex(s string) (uint32, bool) {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n >= math.MaxUint32 {
		return 0, false
	}
	return uint32(n), true
}

// truthy is JavaScript's ToBoolean.
func (v Value) truthy() bool {
	switch v.kind {
	case Undefined, Null:
		return false
	case Bool:
		return v.num != 0
	case Number:
		return v.num != 0 && !math.IsNaN(v.num)
	case String:
		return v.str != ""
	}
	return true
}

// isEmpty is handlebars.js's Utils.isEmpty.
func (v Value) isEmpty() bool {
	if !v.truthy() && !(v.kind == Number && v.num == 0) {
		return true
	}
	return v.kind == Array && len(v.arr.elems) == 0
}

// isNullish is JavaScript's `v == null`.
func (v Value) isNullish() bool { return v.kind == Undefined || v.kind == Null }

// property is handlebars.js's lookupProperty on JSON data: own
// properties only, which for arrays and strings include length and the
// indices.
func (v Value) property(key string) Value {
	switch v.kind {
	case Object:
		r, _ := v.obj.get(key)
		return r
	case Array:
		if key == "length" {
			return numberValue(float64(len(v.arr.elems)))
		}
		if i, ok := arrayIndex(key); ok && int64(i) < int64(len(v.arr.elems)) {
			return v.arr.elems[i]
		}
	case String:
		if key == "length" {
			return numberValue(float64(utf16Len(v.str)))
		}
		if i, ok := arrayIndex(key); ok {
			if s, ok := utf16At(v.str, int(i)); ok {
				return stringValue(s)
			}
		}
	}
	return undefined
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// utf16At returns the UTF-16 code unit at i as a string; half of a
// surrogate pair becomes U+FFFD, as writing it out as UTF-8 does.
func utf16At(s string, i int) (string, bool) {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			if i == n || i == n+1 {
				return string(utf8.RuneError), true
			}
			n += 2
			continue
		}
		if i == n {
			return string(r), true
		}
		n++
	}
	return "", false
}

// toString is JavaScript's String(v), with undefined and null as "" (as
// handlebars.js appends them, and as Array.prototype.join joins them).
func (v Value) toString() string {
	switch v.kind {
	case Undefined, Null:
		return ""
	case Bool:
		if v.num != 0 {
			return "true"
		}
		return "false"
	case Number:
		return formatNumber(v.num)
	case String:
		return v.str
	case Array:
		var b strings.Builder
		v.writeTo(&b)
		return b.String()
	}
	return "[object Object]"
}

type stringWriter interface {
	WriteString(s string) (int, error)
}

// writeTo writes toString(v) to w; arrays are joined with commas,
// recursively, without building each element's string first.
func (v Value) writeTo(w stringWriter) {
	if v.kind != Array {
		w.WriteString(v.toString())
		return
	}
	for i, e := range v.arr.elems {
		if i > 0 {
			w.WriteString(",")
		}
		e.writeTo(w)
	}
}

// formatNumber is JavaScript's Number.prototype.toString() (radix 10).
func formatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-tripping digits, as ECMAScript's Number::toString
	// asks for: d.ddddde±x.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	ex := strconv.Itoa(abs(n - 1))
	if k == 1 {
		return sign + digits + "e" + es + ex
	}
	return sign + digits[:1] + "." + digits[1:] + "e" + es + ex
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// looseEqual is JavaScript's ==, which handlebars.js uses to decide
// whether a block's context is a new depth for ../ paths.
func looseEqual(a, b Value) bool {
	ak, bk := a.kind, b.kind
	if ak == nullContext {
		ak = Object
	}
	if bk == nullContext {
		bk = Object
	}
	if ak == bk {
		switch ak {
		case Undefined, Null:
			return true
		case Bool, Number:
			return a.num == b.num
		case String:
			return a.str == b.str
		case Array:
			return a.arr == b.arr
		}
		return a.obj == b.obj
	}
	if a.isNullish() || b.isNullish() {
		return a.isNullish() && b.isNullish()
	}
	switch {
	case ak == Number && bk == String:
		return a.num == stringToNumber(b.str)
	case ak == String && bk == Number:
		return stringToNumber(a.str) == b.num
	case ak == Bool:
		return looseEqual(numberValue(a.num), b)
	case bk == Bool:
		return looseEqual(a, numberValue(b.num))
	case (ak == Array || ak == Object) && (bk == Number || bk == String):
		return looseEqual(stringValue(a.toString()), b)
	case (bk == Array || bk == Object) && (ak == Number || ak == String):
		return looseEqual(a, stringValue(b.toString()))
	}
	return false
}

// stringToNumber is JavaScript's ToNumber applied to a string.
func stringToNumber(s string) float64 {
	s = strings.TrimFunc(s, isJSSpace)
	if s == "" {
		return 0
	}
	switch s {
	case "Infinity", "+Infinity":
		return math.Inf(1)
	case "-Infinity":
		return math.Inf(-1)
	}
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			f := 0.0
			for _, c := range s[2:] {
				d := digitVal(c)
				if d >= base {
					return math.NaN()
				}
				f = f*float64(base) + float64(d)
			}
			return f
		}
	}
	// StrDecimalLiteral: sign, digits, optional fraction and exponent.
	i := 0
	if s[0] == '+' || s[0] == '-' {
		i++
	}
	digits := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return math.NaN()
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		ed := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			ed++
		}
		if ed == 0 {
			return math.NaN()
		}
	}
	if i != len(s) {
		return math.NaN()
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeErr(err) {
		return math.NaN()
	}
	return f
}

func digitVal(c rune) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}

func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// toPropertyKey is JavaScript's ToPropertyKey for the lookup helper.
func (v Value) toPropertyKey() string {
	switch v.kind {
	case Undefined:
		return "undefined"
	case Null:
		return "null"
	}
	return v.toString()
}
