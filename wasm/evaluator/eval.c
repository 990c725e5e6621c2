// The sandbox's fast evaluator: renders a template's compiled program
// (package hbs, Template.Encode) with values in binary (hbs.EncodeValues).
//
// It is the same runtime as wasm/internal/hbs/eval.go, written in C so
// that its WebAssembly has structured control flow: wazero's
// close-on-context-done check runs at every loop header, and Go's wasm
// passes one on every taken branch, where this code passes one per loop
// iteration. It covers what templates do when they render; anything else
// (an error, a partial, a comparison JavaScript would make through
// ToNumber, running out of its arena) answers STATUS_FALLBACK, and the
// host evaluates the same program in the Go guest, which gives the
// exact result or error. So this file never has to reproduce an error
// message, and never guesses.
//
// Freestanding: no libc, no imports. Built by wasm/evaluator/build.sh.

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

#define NULL ((void *)0)

enum { STATUS_OK = 0, STATUS_FALLBACK = 1 };

typedef struct {
	const u8 *p;
	u32 n;
} Str;

#define LIT(s) ((Str){(const u8 *)(s), sizeof(s) - 1})

static int eq(Str a, Str b) {
	if (a.n != b.n) {
		return 0;
	}
	u32 i = 0;
	for (; i + 8 <= a.n; i += 8) {
		u64 x, y;
		__builtin_memcpy(&x, a.p + i, 8);
		__builtin_memcpy(&y, b.p + i, 8);
		if (x != y) {
			return 0;
		}
	}
	for (; i < a.n; i++) {
		if (a.p[i] != b.p[i]) {
			return 0;
		}
	}
	return 1;
}

// ---- failure and the arena ----

static int failed;
static Str why;

static void bail(Str reason) {
	if (!failed) {
		failed = 1;
		why = reason;
	}
}

extern u8 __heap_base;
static u32 heap_next = (u32)&__heap_base;

// alloc takes n bytes, 8-aligned, from the arena; it grows the memory
// when it must (the host then closes the instance instead of resetting
// it), and bails when it cannot.
static void *alloc(u32 n) {
	u32 at = (heap_next + 7) & ~7u;
	u64 end = (u64)at + n;
	u64 size = (u64)__builtin_wasm_memory_size(0) << 16;
	if (end > size) {
		u64 pages = (end - size + 0xffff) >> 16;
		if (__builtin_wasm_memory_grow(0, pages) == (__SIZE_TYPE__)-1) {
			bail(LIT("arena exhausted"));
			return NULL;
		}
	}
	heap_next = (u32)end;
	return (void *)at;
}

// ---- values (hbs/value.go) ----

enum { K_UNDEF, K_NULL, K_BOOL, K_NUM, K_STR, K_ARR, K_OBJ, K_NULLCTX };

struct Value;
typedef struct {
	u32 n;
	struct Value *e;
} Arr;
typedef struct {
	u32 n;
	Str *k;
	struct Value *v;
} Obj;

// A Value: bools are num 0 or 1; a number's s is its JavaScript
// string (empty for a small integer made here, formatted when used);
// plain: a string with nothing escapeExpression replaces.
typedef struct Value {
	u8 kind;
	u8 plain;
	double num;
	Str s;
	void *ref;
} Value;

static Obj nullobj;
static const Value undef = {K_UNDEF};
static const Value nullv = {K_NULL};
static const Value nullctx = {K_NULLCTX, 0, 0, {0, 0}, &nullobj};
static const Value empty = {K_STR, 1};

static Value boolv(int b) { return (Value){K_BOOL, 0, b ? 1 : 0}; }
static Value intv(u32 i) { return (Value){K_NUM, 0, (double)i}; }
static Value strv(Str s, int plain) { return (Value){K_STR, (u8)plain, 0, s}; }

static int nullish(const Value *v) { return v->kind == K_UNDEF || v->kind == K_NULL; }

static int truthy(const Value *v) {
	switch (v->kind) {
	case K_UNDEF:
	case K_NULL:
		return 0;
	case K_BOOL:
		return v->num != 0;
	case K_NUM:
		return v->num != 0 && v->num == v->num;
	case K_STR:
		return v->s.n != 0;
	}
	return 1;
}

static int is_empty(const Value *v) {
	if (!truthy(v) && !(v->kind == K_NUM && v->num == 0)) {
		return 1;
	}
	return v->kind == K_ARR && ((Arr *)v->ref)->n == 0;
}

// numstr is a number's JavaScript string; buf holds a small integer's.
static Str numstr(const Value *v, u8 buf[12]) {
	if (v->s.n) {
		return v->s;
	}
	u32 i = (u32)v->num, at = 12;
	do {
		buf[--at] = (u8)('0' + i % 10);
		i /= 10;
	} while (i);
	return (Str){buf + at, 12 - at};
}

// arrayIndex is hbs.arrayIndex: a canonical index below 2^32-1.
static int array_index(Str s, u32 *out) {
	if (s.n == 0 || s.n > 10 || (s.n > 1 && s.p[0] == '0')) {
		return 0;
	}
	u64 n = 0;
	for (u32 i = 0; i < s.n; i++) {
		u8 c = s.p[i];
		if (c < '0' || c > '9') {
			return 0;
		}
		n = n * 10 + (c - '0');
	}
	if (n >= 0xffffffffull) {
		return 0;
	}
	*out = (u32)n;
	return 1;
}

// property is hbs.Value.property: own properties of JSON data.
static Value property(const Value *v, Str key) {
	switch (v->kind) {
	case K_OBJ: {
		Obj *o = v->ref;
		for (u32 i = 0; i < o->n; i++) {
			if (eq(o->k[i], key)) {
				return o->v[i];
			}
		}
		return undef;
	}
	case K_ARR: {
		Arr *a = v->ref;
		u32 i;
		if (eq(key, LIT("length"))) {
			return intv(a->n);
		}
		if (array_index(key, &i) && i < a->n) {
			return a->e[i];
		}
		return undef;
	}
	case K_STR: {
		// ASCII only: one byte, one UTF-16 unit. Other strings are left
		// to the Go guest (surrogate pairs, invalid sequences).
		u32 want;
		for (u32 i = 0; i < v->s.n; i++) {
			if (v->s.p[i] >= 0x80) {
				bail(LIT("non-ASCII string property"));
				return undef;
			}
		}
		if (eq(key, LIT("length"))) {
			return intv(v->s.n);
		}
		if (array_index(key, &want) && want < v->s.n) {
			Str c = {v->s.p + want, 1};
			u8 x = c.p[0];
			return strv(c, !(x == '&' || x == '<' || x == '>' || x == '"' || x == '\'' || x == '`' || x == '='));
		}
		return undef;
	}
	}
	return undef;
}

// loose_equal is JavaScript's == where it needs no ToNumber of a
// string; it bails otherwise.
static int loose_equal(const Value *a, const Value *b) {
	u8 ak = a->kind == K_NULLCTX ? K_OBJ : a->kind;
	u8 bk = b->kind == K_NULLCTX ? K_OBJ : b->kind;
	if (ak == bk) {
		switch (ak) {
		case K_UNDEF:
		case K_NULL:
			return 1;
		case K_BOOL:
		case K_NUM:
			return a->num == b->num;
		case K_STR:
			return eq(a->s, b->s);
		}
		return a->ref == b->ref;
	}
	if (nullish(a) || nullish(b)) {
		return nullish(a) && nullish(b);
	}
	// A boolean compares as its number; an object's string is
	// "[object Object]", never a number; an array and an object are
	// never equal.
	ak = ak == K_BOOL ? K_NUM : ak;
	bk = bk == K_BOOL ? K_NUM : bk;
	if (ak == K_NUM && bk == K_NUM) {
		return a->num == b->num;
	}
	if ((ak == K_OBJ && (bk == K_NUM || bk == K_ARR)) || (bk == K_OBJ && (ak == K_NUM || ak == K_ARR))) {
		return 0;
	}
	if (ak == K_OBJ && bk == K_STR) {
		return eq(b->s, LIT("[object Object]"));
	}
	if (ak == K_STR && bk == K_OBJ) {
		return eq(a->s, LIT("[object Object]"));
	}
	bail(LIT("comparison needs ToNumber"));
	return 0;
}

// ---- decoding ----

typedef struct {
	const u8 *b;
	u32 n, pos;
	u32 max_depth;
} Dec;

static u8 dbyte(Dec *d) {
	if (d->pos >= d->n) {
		bail(LIT("truncated"));
		return 0;
	}
	return d->b[d->pos++];
}

static u64 duvarint(Dec *d) {
	if (d->pos < d->n && d->b[d->pos] < 0x80) {
		return d->b[d->pos++];
	}
	u64 v = 0;
	for (u32 shift = 0; shift < 64; shift += 7) {
		u8 c = dbyte(d);
		if (failed) {
			return 0;
		}
		v |= (u64)(c & 0x7f) << shift;
		if (c < 0x80) {
			return v;
		}
	}
	bail(LIT("bad varint"));
	return 0;
}

// dcount reads a number of items, each at least a byte long.
static u32 dcount(Dec *d) {
	u64 n = duvarint(d);
	if (n > d->n - d->pos) {
		bail(LIT("count past the end"));
		return 0;
	}
	return (u32)n;
}

static Str dstring(Dec *d) {
	u64 n = duvarint(d);
	if (failed || n > d->n - d->pos) {
		bail(LIT("string past the end"));
		return (Str){0, 0};
	}
	Str s = {d->b + d->pos, (u32)n};
	d->pos += (u32)n;
	return s;
}

static double dfloat(Dec *d) {
	if (d->n - d->pos < 8) {
		bail(LIT("truncated number"));
		return 0;
	}
	double f;
	__builtin_memcpy(&f, d->b + d->pos, 8);
	d->pos += 8;
	return f;
}

// Values: hbs/valuesbin.go.
enum { V_NULL = 1, V_FALSE, V_TRUE, V_NUMBER, V_STRING, V_PLAIN, V_ARRAY, V_OBJECT };

static Value dvalue(Dec *d, u32 depth) {
	Value v = undef;
	u8 tag = dbyte(d);
	switch (tag) {
	case V_NULL:
		return nullv;
	case V_FALSE:
		return boolv(0);
	case V_TRUE:
		return boolv(1);
	case V_NUMBER:
		v.kind = K_NUM;
		v.num = dfloat(d);
		v.s = dstring(d);
		return v;
	case V_STRING:
	case V_PLAIN:
		return strv(dstring(d), tag == V_PLAIN);
	case V_ARRAY:
	case V_OBJECT: {
		if (depth >= d->max_depth) {
			bail(LIT("values too deep"));
			return v;
		}
		u32 n = dcount(d);
		Value *vals = alloc(n * sizeof(Value));
		if (failed) {
			return v;
		}
		if (tag == V_ARRAY) {
			Arr *a = alloc(sizeof(Arr));
			for (u32 i = 0; i < n && !failed; i++) {
				vals[i] = dvalue(d, depth + 1);
			}
			if (failed) {
				return v;
			}
			a->n = n;
			a->e = vals;
			v.kind = K_ARR;
			v.ref = a;
			return v;
		}
		Obj *o = alloc(sizeof(Obj));
		Str *keys = alloc(n * sizeof(Str));
		for (u32 i = 0; i < n && !failed; i++) {
			keys[i] = dstring(d);
			vals[i] = dvalue(d, depth + 1);
		}
		if (failed) {
			return v;
		}
		o->n = n;
		o->k = keys;
		o->v = vals;
		v.kind = K_OBJ;
		v.ref = o;
		return v;
	}
	}
	bail(LIT("bad value tag"));
	return v;
}

// Programs: hbs/program.go.
enum {
	T_PROGRAM = 1,
	T_CONTENT,
	T_COMMENT,
	T_MUSTACHE,
	T_BLOCK,
	T_PARTIAL,
	T_EXPRESSION,
	T_SUBEXPRESSION,
	T_PATH,
	T_STRING,
	T_NUMBER,
	T_BOOLEAN,
	T_NONE,
};

typedef struct {
	u8 data, scoped;
	u32 depth;
	Str orig;
	u32 n;
	Str *parts; // brackets of literal segments stripped
} Path;

struct Prog;
struct Expr;
struct Hash;

// Node is a statement or a parameter.
typedef struct Node {
	u8 tag;
	u8 flag;   // a mustache's unescaped, a boolean's value
	Str s;     // content, string, a number's JavaScript string
	double num;
	Path *path;
	struct Expr *expr;         // mustache, block, (sub)expression
	struct Prog *prog, *inv;   // block
} Node;

typedef struct Expr {
	Path *head;
	u32 np;
	Node *params;
	struct Hash *hash;
} Expr;

typedef struct Hash {
	u32 n;
	Str *keys;
	Node *vals;
} Hash;

typedef struct Prog {
	u32 nbp;
	Str *bp;
	u32 n;
	Node *body;
} Prog;

static Str unbracket(Str s) {
	if (s.n >= 2 && s.p[0] == '[' && s.p[s.n - 1] == ']') {
		return (Str){s.p + 1, s.n - 2};
	}
	return s;
}

static Path *dpath(Dec *d) {
	u8 flags = dbyte(d);
	if (flags > 3) {
		bail(LIT("bad path flags"));
	}
	Path *p = alloc(sizeof(Path));
	if (failed) {
		return NULL;
	}
	p->data = flags & 1;
	p->scoped = (flags >> 1) & 1;
	u64 depth = duvarint(d);
	if (depth > (1u << 20)) {
		bail(LIT("path depth"));
	}
	p->depth = (u32)depth;
	p->orig = dstring(d);
	p->n = dcount(d);
	p->parts = alloc(p->n * sizeof(Str));
	for (u32 i = 0; i < p->n && !failed; i++) {
		p->parts[i] = unbracket(dstring(d));
	}
	return p;
}

// dliteral decodes a literal's fields into n.
static void dliteral(Dec *d, u8 tag, Node *n) {
	n->tag = tag;
	switch (tag) {
	case T_STRING:
		n->s = dstring(d);
		return;
	case T_NUMBER:
		n->num = dfloat(d);
		n->s = dstring(d);
		return;
	}
	u8 b = dbyte(d);
	if (b > 1) {
		bail(LIT("bad flag"));
	}
	n->flag = b;
}

// literal_path is handlebars.js's transformLiteralToPath for a literal
// helper name.
static Path *literal_path(const Node *n) {
	Path *p = alloc(sizeof(Path) + sizeof(Str));
	if (failed) {
		return NULL;
	}
	p->parts = (Str *)(p + 1);
	p->n = 1;
	switch (n->tag) {
	case T_STRING:
	case T_NUMBER:
		p->orig = n->s;
		break;
	default:
		p->orig = n->flag ? LIT("true") : LIT("false");
	}
	p->parts[0] = p->orig;
	return p;
}

static Expr *dexpression(Dec *d, u32 depth);
static Prog *dprogram(Dec *d, u32 depth, int *present);

static void dvalue_node(Dec *d, u32 depth, Node *n) {
	u8 tag = dbyte(d);
	switch (tag) {
	case T_PATH:
		n->tag = T_PATH;
		n->path = dpath(d);
		return;
	case T_STRING:
	case T_NUMBER:
	case T_BOOLEAN:
		dliteral(d, tag, n);
		return;
	case T_SUBEXPRESSION:
	case T_EXPRESSION:
		if (depth >= d->max_depth) {
			bail(LIT("expressions too deep"));
			return;
		}
		n->tag = T_SUBEXPRESSION;
		n->expr = dexpression(d, depth + 1);
		return;
	}
	bail(LIT("expected a value"));
}

static Node *dparams(Dec *d, u32 depth, u32 *np) {
	*np = dcount(d);
	Node *ps = alloc(*np * sizeof(Node));
	for (u32 i = 0; i < *np && !failed; i++) {
		dvalue_node(d, depth, &ps[i]);
	}
	return ps;
}

static Hash *dhash(Dec *d, u32 depth) {
	u8 b = dbyte(d);
	if (b == T_NONE) {
		return NULL;
	}
	if (b != 0) {
		bail(LIT("bad hash"));
		return NULL;
	}
	Hash *h = alloc(sizeof(Hash));
	if (failed) {
		return NULL;
	}
	h->n = dcount(d);
	h->keys = alloc(h->n * sizeof(Str));
	h->vals = alloc(h->n * sizeof(Node));
	for (u32 i = 0; i < h->n && !failed; i++) {
		h->keys[i] = dstring(d);
		dvalue_node(d, depth, &h->vals[i]);
	}
	return h;
}

static Expr *dexpression(Dec *d, u32 depth) {
	Expr *e = alloc(sizeof(Expr));
	if (failed) {
		return NULL;
	}
	u8 tag = dbyte(d);
	switch (tag) {
	case T_PATH:
		e->head = dpath(d);
		break;
	case T_STRING:
	case T_NUMBER:
	case T_BOOLEAN: {
		Node lit = {0};
		dliteral(d, tag, &lit);
		e->head = literal_path(&lit);
		break;
	}
	default:
		bail(LIT("bad expression head"));
		return e;
	}
	e->params = dparams(d, depth, &e->np);
	e->hash = dhash(d, depth);
	return e;
}

static void dstatement(Dec *d, u32 depth, Node *n) {
	u8 tag = dbyte(d);
	n->tag = tag;
	switch (tag) {
	case T_CONTENT:
		n->s = dstring(d);
		return;
	case T_COMMENT:
		return;
	case T_MUSTACHE: {
		u8 b = dbyte(d);
		if (b > 1) {
			bail(LIT("bad flag"));
		}
		n->flag = b;
		n->expr = dexpression(d, depth);
		return;
	}
	case T_BLOCK: {
		int present;
		n->expr = dexpression(d, depth);
		n->prog = dprogram(d, depth, &present);
		n->inv = dprogram(d, depth, &present);
		return;
	}
	case T_PARTIAL: {
		// Decoded to be skipped: rendering one is an error, left to the
		// Go guest.
		u8 name = dbyte(d);
		if (name == T_PATH) {
			dpath(d);
		} else if (name == T_SUBEXPRESSION) {
			if (depth >= d->max_depth) {
				bail(LIT("subexpressions too deep"));
				return;
			}
			dexpression(d, depth + 1);
		} else {
			bail(LIT("bad partial name"));
		}
		u32 np;
		dparams(d, depth, &np);
		dhash(d, depth);
		return;
	}
	}
	bail(LIT("expected a statement"));
}

// dprogram decodes an optional program: NULL when absent.
static Prog *dprogram(Dec *d, u32 depth, int *present) {
	u8 tag = dbyte(d);
	*present = 0;
	if (tag == T_NONE || failed) {
		return NULL;
	}
	if (tag != T_PROGRAM) {
		bail(LIT("expected a program"));
		return NULL;
	}
	if (depth >= d->max_depth) {
		bail(LIT("programs too deep"));
		return NULL;
	}
	Prog *p = alloc(sizeof(Prog));
	if (failed) {
		return NULL;
	}
	p->nbp = dcount(d);
	p->bp = alloc(p->nbp * sizeof(Str));
	for (u32 i = 0; i < p->nbp && !failed; i++) {
		p->bp[i] = dstring(d);
	}
	p->n = dcount(d);
	p->body = alloc(p->n * sizeof(Node));
	for (u32 i = 0; i < p->n && !failed; i++) {
		dstatement(d, depth + 1, &p->body[i]);
	}
	*present = 1;
	return p;
}

// ---- output ----

static u8 *out;
static u32 out_len, out_cap, out_max;

static void write(Str s) {
	if (failed || s.n == 0) {
		return;
	}
	if ((u64)out_len + s.n > out_max) {
		bail(LIT("output too large"));
		return;
	}
	if (out_len + s.n > out_cap) {
		u32 cap = out_cap * 2;
		if (cap < out_len + s.n) {
			cap = out_len + s.n;
		}
		if (cap > out_max) {
			cap = out_max;
		}
		u8 *next = alloc(cap);
		if (failed) {
			return;
		}
		__builtin_memcpy(next, out, out_len);
		out = next;
		out_cap = cap;
	}
	__builtin_memcpy(out + out_len, s.p, s.n);
	out_len += s.n;
}

// escape is handlebars.js's escapeExpression.
static void escape(Str s) {
	u32 start = 0;
	for (u32 i = 0; i < s.n; i++) {
		Str rep;
		switch (s.p[i]) {
		case '&':
			rep = LIT("&amp;");
			break;
		case '<':
			rep = LIT("&lt;");
			break;
		case '>':
			rep = LIT("&gt;");
			break;
		case '"':
			rep = LIT("&quot;");
			break;
		case '\'':
			rep = LIT("&#x27;");
			break;
		case '`':
			rep = LIT("&#x60;");
			break;
		case '=':
			rep = LIT("&#x3D;");
			break;
		default:
			continue;
		}
		write((Str){s.p + start, i - start});
		write(rep);
		start = i + 1;
	}
	write((Str){s.p + start, s.n - start});
}

static void write_value(const Value *v, int escaped);

// write_array writes String(array): its elements' strings joined with
// commas (escaping the whole is escaping each piece).
static void write_array(const Arr *a, int escaped) {
	for (u32 i = 0; i < a->n && !failed; i++) {
		if (i > 0) {
			write(LIT(","));
		}
		write_value(&a->e[i], escaped);
	}
}

// write_value appends v as handlebars.js appends a helper's or a
// path's result: nothing for null and undefined, String(v) otherwise.
static void write_value(const Value *v, int escaped) {
	u8 buf[12];
	switch (v->kind) {
	case K_UNDEF:
	case K_NULL:
		return;
	case K_STR:
		if (escaped && !v->plain) {
			escape(v->s);
		} else {
			write(v->s);
		}
		return;
	case K_ARR:
		write_array(v->ref, escaped);
		return;
	case K_BOOL:
		write(v->num != 0 ? LIT("true") : LIT("false"));
		return;
	case K_NUM:
		write(numstr(v, buf)); // digits, '.', '-', '+', 'e', letters: nothing to escape
		return;
	}
	write(LIT("[object Object]"));
}

// ---- rendering (hbs/eval.go) ----

enum { HAS_ROOT = 1, HAS_KEY = 2, HAS_INDEX = 4, HAS_FIRST = 8, HAS_LAST = 16 };

typedef struct Frame {
	Value root, key, index, first, last;
	u8 set;
	struct Frame *parent;
} Frame;

typedef struct Depth {
	Value v;
	struct Depth *next;
} Depth;

typedef struct BlockParams {
	const Str *names;
	u32 nn;
	const Value *vals;
	u32 nv;
	struct BlockParams *next;
} BlockParams;

typedef struct {
	Value ctx;
	Frame *data;
	Depth *depths;
	BlockParams *params;
} Scope;

static int use_depths;

static Value frame_get(const Frame *f, Str name) {
	if (eq(name, LIT("root")) && (f->set & HAS_ROOT)) {
		return f->root;
	}
	if (eq(name, LIT("key")) && (f->set & HAS_KEY)) {
		return f->key;
	}
	if (eq(name, LIT("index")) && (f->set & HAS_INDEX)) {
		return f->index;
	}
	if (eq(name, LIT("first")) && (f->set & HAS_FIRST)) {
		return f->first;
	}
	if (eq(name, LIT("last")) && (f->set & HAS_LAST)) {
		return f->last;
	}
	return undef;
}

static int block_param(const Scope *s, Str name, Value *v) {
	for (const BlockParams *p = s->params; p; p = p->next) {
		for (u32 i = 0; i < p->nn; i++) {
			if (eq(p->names[i], name)) {
				*v = i < p->nv ? p->vals[i] : undef;
				return 1;
			}
		}
	}
	return 0;
}

static Value this_of(const Scope *s) { return nullish(&s->ctx) ? nullctx : s->ctx; }

static void statement(const Node *n, Scope *s);

// program runs p as handlebars.js's wrapProgram does: a context that
// differs (JavaScript !=) from the current one becomes a new depth.
static void program(const Prog *p, Value ctx, Frame *data, const Value *bp, u32 nbp, Scope *parent) {
	if (!p || failed) {
		return;
	}
	Scope s = {ctx, data, parent->depths, parent->params};
	Depth d;
	BlockParams b;
	const Depth *top = parent->depths;
	if (use_depths && !loose_equal(&ctx, &top->v) && !(ctx.kind == K_NULLCTX && top->v.kind == K_NULL)) {
		d.v = ctx;
		d.next = parent->depths;
		s.depths = &d;
	}
	if (p->nbp > 0) {
		b = (BlockParams){p->bp, p->nbp, bp, nbp, parent->params};
		s.params = &b;
	}
	for (u32 i = 0; i < p->n && !failed; i++) {
		statement(&p->body[i], &s);
	}
}

// path resolves a path as the compiled template does.
static Value path(const Path *p, const Scope *s) {
	u32 i = 0;
	Value v;
	if (p->data) {
		const Frame *f = s->data;
		for (u32 k = 0; k < p->depth && f; k++) {
			f = f->parent;
		}
		if (!f || p->n == 0) {
			return undef;
		}
		v = frame_get(f, p->parts[0]);
		i = 1;
	} else if (p->n > 0 && !p->scoped && p->depth == 0 && block_param(s, p->parts[0], &v)) {
		i = 1;
	} else if (p->depth == 0) {
		v = s->ctx;
	} else {
		const Depth *d = s->depths;
		for (u32 k = 0; k < p->depth && d; k++) {
			d = d->next;
		}
		if (!d) {
			return undef;
		}
		v = d->v;
	}
	for (; i < p->n; i++) {
		if (nullish(&v)) {
			return v;
		}
		v = property(&v, p->parts[i]);
	}
	return v;
}

enum { MUSTACHE, BLOCK, SUBEXPRESSION };

static Value expression(const Expr *e, Scope *s, const Prog *fn, const Prog *inv, int kind);

static Value param(const Node *n, Scope *s) {
	switch (n->tag) {
	case T_STRING:
		return strv(n->s, 0);
	case T_NUMBER:
		return (Value){K_NUM, 0, n->num, n->s};
	case T_BOOLEAN:
		return boolv(n->flag);
	case T_SUBEXPRESSION:
		return expression(n->expr, s, NULL, NULL, SUBEXPRESSION);
	}
	const Path *p = n->path;
	if (!p->data && !p->scoped && p->depth == 0 && p->n == 1) {
		if (eq(p->orig, LIT("null"))) {
			return nullv;
		}
		if (eq(p->orig, LIT("undefined"))) {
			return undef;
		}
	}
	return path(p, s);
}

static void each(const Value *v, Scope *s, const Prog *fn, const Prog *inv) {
	Frame f = *s->data;
	f.parent = s->data;
	f.set |= HAS_KEY | HAS_INDEX | HAS_FIRST | HAS_LAST;
	u32 n = 0;
	Value bp[2];
	u32 nbp = fn && fn->nbp > 0 ? 2 : 0;
	if (v->kind == K_ARR) {
		const Arr *a = v->ref;
		for (u32 i = 0; i < a->n && !failed; i++) {
			f.key = f.index = intv(i);
			f.first = boolv(i == 0);
			f.last = boolv(i == a->n - 1);
			bp[0] = a->e[i];
			bp[1] = f.key;
			program(fn, a->e[i], &f, bp, nbp, s);
			n++;
		}
	} else if (v->kind == K_OBJ || v->kind == K_NULLCTX) {
		const Obj *o = v->ref;
		for (u32 i = 0; i < o->n && !failed; i++) {
			f.key = strv(o->k[i], 0);
			f.index = intv(i);
			f.first = boolv(i == 0);
			f.last = boolv(i == o->n - 1);
			bp[0] = o->v[i];
			bp[1] = f.key;
			program(fn, o->v[i], &f, bp, nbp, s);
			n++;
		}
	}
	if (n == 0) {
		program(inv, this_of(s), s->data, NULL, 0, s);
	}
}

static Value block_helper_missing(const Value *v, Scope *s, const Prog *fn, const Prog *inv) {
	if (v->kind == K_BOOL && v->num != 0) {
		program(fn, this_of(s), s->data, NULL, 0, s);
	} else if (v->kind == K_BOOL || nullish(v)) {
		program(inv, this_of(s), s->data, NULL, 0, s);
	} else if (v->kind == K_ARR) {
		if (((Arr *)v->ref)->n > 0) {
			each(v, s, fn, inv);
		} else {
			program(inv, this_of(s), s->data, NULL, 0, s);
		}
	} else {
		program(fn, *v, s->data, NULL, 0, s);
	}
	return empty;
}

enum { H_NONE, H_HELPER_MISSING, H_BLOCK_HELPER_MISSING, H_EACH, H_IF, H_UNLESS, H_WITH, H_LOG, H_LOOKUP };

static int builtin(Str name) {
	switch (name.n) {
	case 2:
		return eq(name, LIT("if")) ? H_IF : H_NONE;
	case 3:
		return eq(name, LIT("log")) ? H_LOG : H_NONE;
	case 4:
		return eq(name, LIT("each")) ? H_EACH : eq(name, LIT("with")) ? H_WITH : H_NONE;
	case 6:
		return eq(name, LIT("unless")) ? H_UNLESS : eq(name, LIT("lookup")) ? H_LOOKUP : H_NONE;
	case 13:
		return eq(name, LIT("helperMissing")) ? H_HELPER_MISSING : H_NONE;
	case 18:
		return eq(name, LIT("blockHelperMissing")) ? H_BLOCK_HELPER_MISSING : H_NONE;
	}
	return H_NONE;
}

// property_key is JavaScript's ToPropertyKey for the lookup helper.
static Str property_key(const Value *v, u8 buf[12]) {
	switch (v->kind) {
	case K_UNDEF:
		return LIT("undefined");
	case K_NULL:
		return LIT("null");
	case K_BOOL:
		return v->num != 0 ? LIT("true") : LIT("false");
	case K_NUM:
		return numstr(v, buf);
	case K_STR:
		return v->s;
	case K_ARR:
		bail(LIT("lookup by an array"));
		return LIT("");
	}
	return LIT("[object Object]");
}

#define MAX_PARAMS 16

// expression evaluates a mustache, a block or a subexpression, as
// handlebars.js's compiler classifies it (eval.go's expression). Every
// case that would throw bails.
static Value expression(const Expr *e, Scope *s, const Prog *fn, const Prog *inv, int kind) {
	const Path *p = e->head;
	int simple = p->n == 1 && !p->scoped && p->depth == 0;
	int is_bp = 0;
	if (simple && !p->data) {
		Value ignored;
		is_bp = block_param(s, p->parts[0], &ignored);
	}
	int has_args = e->np > 0 || e->hash || kind == SUBEXPRESSION;
	int helper = !is_bp && has_args;
	int h = p->n > 0 ? builtin(p->parts[0]) : H_NONE;
	if (!is_bp && !helper && simple && h != H_NONE) {
		helper = 1;
	}
	if (!helper) {
		Value v = path(p, s);
		if (kind != BLOCK) {
			return v;
		}
		return block_helper_missing(&v, s, fn, inv);
	}
	if (h == H_NONE) {
		// A value is not a function; helperMissing throws when given
		// parameters.
		if (e->np > 0) {
			bail(LIT("missing helper"));
			return undef;
		}
		Value v = path(p, s);
		if (truthy(&v)) {
			bail(LIT("not a function"));
		}
		if (e->hash) {
			// Evaluated for their errors, as the Go runtime does.
			for (u32 i = 0; i < e->hash->n && !failed; i++) {
				param(&e->hash->vals[i], s);
			}
		}
		return undef;
	}
	if (e->np > MAX_PARAMS) {
		bail(LIT("too many parameters"));
		return undef;
	}
	Value ps[MAX_PARAMS];
	for (u32 i = 0; i < e->np && !failed; i++) {
		ps[i] = param(&e->params[i], s);
	}
	int include_zero = 0;
	if (e->hash) {
		for (u32 i = 0; i < e->hash->n && !failed; i++) {
			Value v = param(&e->hash->vals[i], s);
			if (eq(e->hash->keys[i], LIT("includeZero"))) {
				include_zero = truthy(&v);
			}
		}
	}
	if (failed) {
		return undef;
	}
	if (kind != BLOCK && (h == H_IF || h == H_UNLESS || h == H_WITH || h == H_EACH || h == H_BLOCK_HELPER_MISSING)) {
		bail(LIT("block helper outside a block"));
		return undef;
	}
	switch (h) {
	case H_IF:
	case H_UNLESS: {
		if (e->np != 1) {
			bail(LIT("#if arity"));
			return undef;
		}
		int cond = !((!include_zero && !truthy(&ps[0])) || is_empty(&ps[0]));
		if (h == H_UNLESS) {
			cond = !cond;
		}
		program(cond ? fn : inv, this_of(s), s->data, NULL, 0, s);
		return empty;
	}
	case H_WITH:
		if (e->np != 1) {
			bail(LIT("#with arity"));
			return undef;
		}
		if (!is_empty(&ps[0])) {
			program(fn, ps[0], s->data, ps, fn && fn->nbp > 0 ? 1 : 0, s);
		} else {
			program(inv, this_of(s), s->data, NULL, 0, s);
		}
		return empty;
	case H_EACH:
		if (e->np != 1) {
			bail(LIT("#each arity"));
			return undef;
		}
		each(&ps[0], s, fn, inv);
		return empty;
	case H_LOOKUP: {
		if (e->np == 0) {
			bail(LIT("lookup arity"));
			return undef;
		}
		if (!truthy(&ps[0])) {
			return ps[0];
		}
		if (e->np != 2) {
			bail(LIT("lookup arity"));
			return undef;
		}
		u8 buf[12];
		Str key = property_key(&ps[1], buf);
		if (failed) {
			return undef;
		}
		return property(&ps[0], key); // its result never points into buf
	}
	case H_LOG:
		return undef;
	case H_HELPER_MISSING:
		if (e->np > 0) {
			bail(LIT("missing helper"));
		}
		return undef;
	case H_BLOCK_HELPER_MISSING:
		if (e->np != 1) {
			bail(LIT("blockHelperMissing arity"));
			return undef;
		}
		return block_helper_missing(&ps[0], s, fn, inv);
	}
	bail(LIT("unknown helper"));
	return undef;
}

static void statement(const Node *n, Scope *s) {
	switch (n->tag) {
	case T_CONTENT:
		write(n->s);
		return;
	case T_COMMENT:
		return;
	case T_MUSTACHE: {
		Value v = expression(n->expr, s, NULL, NULL, MUSTACHE);
		write_value(&v, !n->flag);
		return;
	}
	case T_BLOCK: {
		Value v = expression(n->expr, s, n->prog, n->inv, BLOCK);
		write_value(&v, 0);
		return;
	}
	}
	bail(LIT("partial"));
}

// ---- exports ----

static u8 input_buffer[64 << 10];
static u8 *input = input_buffer;
static u32 input_cap = sizeof input_buffer;

// pictor_input: the input buffer, address<<32 | capacity.
__attribute__((export_name("pictor_input"))) u64 pictor_input(void) {
	return (u64)(u32)input_buffer << 32 | sizeof input_buffer;
}

// pictor_alloc makes the input buffer n bytes long (for inputs larger
// than the static one).
__attribute__((export_name("pictor_alloc"))) u32 pictor_alloc(u32 n) {
	u8 *p = alloc(n);
	if (failed) {
		return 0;
	}
	input = p;
	input_cap = n;
	return (u32)p;
}

static u32 result[3]; // status, address, length

static const u8 magic[4] = {'h', 'b', 's', 1};

// pictor_render renders the program at the input's start (programLen
// bytes) with the values after it; it returns the address of its
// result: the status, then the output's (or the reason's) address and
// length.
__attribute__((export_name("pictor_render"))) u32 pictor_render(u32 program_len, u32 values_len, u32 max_depth,
                                                                 u32 max_output) {
	if ((u64)program_len + values_len > input_cap) {
		bail(LIT("lengths out of range"));
	}
	Dec pd = {input, program_len, 0, max_depth + 1};
	Dec vd = {input + program_len, values_len, 0, max_depth};
	if (!failed && (program_len < 6 || !eq((Str){input, 4}, (Str){magic, 4}))) {
		bail(LIT("bad magic"));
	}
	Prog *root = NULL;
	Value values = undef;
	if (!failed) {
		pd.pos = 4;
		u8 flag = dbyte(&pd);
		if (flag > 1) {
			bail(LIT("bad flag"));
		}
		use_depths = flag;
		for (int i = 0; i < 8; i++) {
			dcount(&pd);
		}
		int present;
		root = dprogram(&pd, 0, &present);
		if (!failed && (!root || pd.pos != pd.n)) {
			bail(LIT("bad program"));
		}
	}
	if (!failed) {
		dcount(&vd); // arrays, objects, members: allocated as met here
		dcount(&vd);
		dcount(&vd);
		if (vd.pos >= vd.n || vd.b[vd.pos] != V_OBJECT) {
			bail(LIT("values are not an object"));
		}
		values = dvalue(&vd, 0);
		if (!failed && vd.pos != vd.n) {
			bail(LIT("bytes after the values"));
		}
	}
	if (!failed) {
		out_max = max_output;
		out_cap = 2 * program_len + 1024;
		if (out_cap > out_max) {
			out_cap = out_max;
		}
		out = alloc(out_cap);
		out_len = 0;
	}
	if (!failed) {
		Frame data = {0};
		data.root = values;
		data.set = HAS_ROOT;
		Depth top = {values, NULL};
		Scope parent = {undef, &data, &top, NULL};
		program(root, values, &data, NULL, 0, &parent);
	}
	if (failed) {
		result[0] = STATUS_FALLBACK;
		result[1] = (u32)why.p;
		result[2] = why.n;
	} else {
		result[0] = STATUS_OK;
		result[1] = (u32)out;
		result[2] = out_len;
	}
	return (u32)result;
}
