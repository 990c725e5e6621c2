//go:build wasip1

// Command guest is the sandbox's WebAssembly module: package hbs behind
// the exports of package abi. It is built as a WASI reactor
// (GOOS=wasip1 GOARCH=wasm -buildmode=c-shared) by wasm/build.sh and
// embedded in package wasm; the host instantiates it once per
// evaluation.
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/pictorhq/pictor/wasm/internal/abi"
	"github.com/pictorhq/pictor/wasm/internal/hbs"
)

// main is not run: a reactor's runtime starts in _initialize.
func main() {}

// inputBuffer is where the host writes inputs up to its size (see
// abi.ExportInput).
var inputBuffer = make([]byte, 64<<10)

var (
	input   = inputBuffer // written by the host
	result  []byte        // read by the host
	program []byte        // read by the host (abi.FlagEmitProgram)
)

//go:wasmexport pictor_alloc
func alloc(n uint32) uint32 {
	input = make([]byte, n)
	if n == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

//go:wasmexport pictor_result
func resultAddr() uint64 {
	if len(result) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(result))))<<32 | uint64(len(result))
}

//go:wasmexport pictor_input
func inputAddr() uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(inputBuffer))))<<32 | uint64(len(inputBuffer))
}

//go:wasmexport pictor_program
func programAddr() uint64 {
	if len(program) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(program))))<<32 | uint64(len(program))
}

//go:wasmexport pictor_check
func check(templateLen, maxDepth, flags uint32) (status abi.Status) {
	defer recoverInternal(&status)
	if int(templateLen) > len(input) {
		return fail(abi.StatusInternal, errors.New("template length out of range"))
	}
	_, err := load(input[:templateLen], maxDepth, flags)
	return done(err)
}

//go:wasmexport pictor_render
func render(templateLen, valuesLen, maxDepth, maxOutput, flags uint32) (status abi.Status) {
	defer recoverInternal(&status)
	if uint64(templateLen)+uint64(valuesLen) > uint64(len(input)) {
		return fail(abi.StatusInternal, errors.New("lengths out of range"))
	}
	tpl, err := load(input[:templateLen], maxDepth, flags)
	if err != nil {
		return done(err)
	}
	parseValues := hbs.ParseValues
	if flags&abi.FlagBinaryValues != 0 {
		parseValues = hbs.DecodeValues
	}
	values, err := parseValues(input[templateLen:templateLen+valuesLen], int(maxDepth))
	if err != nil {
		return done(err)
	}
	input = nil
	out, err := tpl.Render(values, int(maxOutput))
	if err != nil {
		return done(err)
	}
	result = unsafe.Slice(unsafe.StringData(out), len(out))
	return abi.StatusOK
}

// load parses a template, or decodes its program (abi.FlagProgram),
// and encodes the program for the host when asked to.
func load(src []byte, maxDepth, flags uint32) (*hbs.Template, error) {
	if flags&abi.FlagProgram != 0 {
		return hbs.DecodeProgram(src, int(maxDepth))
	}
	tpl, err := hbs.Parse(string(src), int(maxDepth))
	if err == nil && flags&abi.FlagEmitProgram != 0 {
		program = tpl.Encode(make([]byte, 0, len(src)))
	}
	return tpl, err
}

func done(err error) abi.Status {
	var se *hbs.SyntaxError
	var re *hbs.RenderError
	switch {
	case err == nil:
		return abi.StatusOK
	case errors.As(err, &se):
		result = make([]byte, abi.SyntaxHeader, abi.SyntaxHeader+len(se.Message))
		binary.LittleEndian.PutUint32(result[0:], uint32(se.Line))
		binary.LittleEndian.PutUint32(result[4:], uint32(se.Column))
		result = append(result, se.Message...)
		return abi.StatusSyntax
	case errors.Is(err, hbs.ErrTooDeep):
		return fail(abi.StatusTooDeep, err)
	case errors.Is(err, hbs.ErrOutputTooLarge):
		return fail(abi.StatusOutputLarge, err)
	case errors.Is(err, hbs.ErrValues):
		return fail(abi.StatusValues, err)
	case errors.As(err, &re):
		return fail(abi.StatusRender, err)
	case errors.Is(err, hbs.ErrProgram):
		return fail(abi.StatusProgram, err)
	}
	return fail(abi.StatusInternal, err)
}

func fail(status abi.Status, err error) abi.Status {
	result = []byte(err.Error())
	return status
}

func recoverInternal(status *abi.Status) {
	if p := recover(); p != nil {
		*status = fail(abi.StatusInternal, fmt.Errorf("panic: %v", p))
	}
}
