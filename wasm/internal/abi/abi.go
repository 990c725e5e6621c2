package abi

// The guest's exports.
const (
	ExportAlloc   = "pictor_alloc"   // (n u32) -> addr u32
	ExportCheck   = "pictor_check"   // (templateLen, maxDepth, flags u32) -> Status
	ExportRender  = "pictor_render"  // (templateLen, valuesLen, maxDepth, maxOutput, flags u32) -> Status
	ExportResult  = "pictor_result"  // () -> addr<<32 | len u64
	ExportProgram = "pictor_program" // () -> addr<<32 | len u64
	// ExportInput is the guest's input buffer, allocated when it starts
	// (so in the snapshot): the host writes an input that fits there
	// without calling Alloc.
	ExportInput = "pictor_input" // () -> addr<<32 | cap u64
)

// Flags of Check and Render.
const (
	// FlagProgram: the input is a compiled program, not a template.
	FlagProgram uint32 = 1 << iota
	// FlagEmitProgram: leave the parsed template's program at Program.
	FlagEmitProgram
	// FlagBinaryValues: the values are in hbs.EncodeValues's binary
	// form, not JSON.
	FlagBinaryValues
)

// Status is what Check and Render return.
type Status = uint32

const (
	StatusOK          Status = 0
	StatusSyntax      Status = 1 // result: SyntaxResult
	StatusTooDeep     Status = 2
	StatusOutputLarge Status = 3
	StatusValues      Status = 4
	StatusRender      Status = 5 // handlebars.js would throw: a missing helper or partial...
	StatusInternal    Status = 6 // a bug in the guest (a recovered panic)
	StatusProgram     Status = 7 // the compiled program passed with FlagProgram is invalid
)

// A syntax error's result: line and column as little-endian uint32s,
// then the message.
const SyntaxHeader = 8
