// Command write makes the .br and .gz forms of the files it is given, next
// to them: `go run ./origin/contract/precompress/write FILE...`.
// fetch-redoc.sh (make apidocs) and the OpenAPI golden test
// (PICTOR_UPDATE_OPENAPI=1) run it, or its function, on what they rewrite.
package main

import (
	"fmt"
	"os"

	"github.com/pictorhq/pictor/origin/contract/precompress"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: write FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := precompress.Write(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
