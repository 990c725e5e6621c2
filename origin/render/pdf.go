package render

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpio "github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// printPDF prints the document with the PDF options, a PDF of at most
// limit bytes.
func printPDF(ctx context.Context, tg *chromedp.Target, r *Request, limit int64) (*Result, error) {
	o := r.PDF
	params := page.PrintToPDFParams{
		PrintBackground:   new(o.PrintBackground),
		MarginTop:         new(o.Margins[0]),
		MarginRight:       new(o.Margins[1]),
		MarginBottom:      new(o.Margins[2]),
		MarginLeft:        new(o.Margins[3]),
		PreferCSSPageSize: new(false),
	}
	if o.PageWidth > 0 {
		params.PaperWidth = o.PageWidth
	}
	if o.PageHeight > 0 {
		params.PaperHeight = o.PageHeight
	}
	if o.Scale > 0 {
		params.Scale = o.Scale
	}
	// As a stream, read in chunks: a document of a few pages may still make
	// a PDF of hundreds of megabytes (large images), which as one base64
	// reply would sit in memory several times over.
	params.TransferMode = page.PrintToPDFTransferModeReturnAsStream
	res, err := cdp.Call(ctx, tg, page.PrintToPDF, params)
	if err != nil {
		return nil, err
	}
	data, err := readStream(ctx, tg, res.Stream, limit)
	if err != nil {
		return nil, err
	}
	return &Result{Data: data}, nil
}

// pdfChunk is how much of a PDF stream one read asks for.
const pdfChunk = 1 << 20

// readStream reads a DevTools stream to its end, failing with ErrTooLarge
// as soon as it passes limit bytes, and closes it.
func readStream(ctx context.Context, tg *chromedp.Target, handle cdpio.StreamHandle, limit int64) ([]byte, error) {
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		cdp.Call(cctx, tg, cdpio.Close, cdpio.CloseParams{Handle: handle})
	}()
	var buf bytes.Buffer
	for {
		chunk, err := cdp.Call(ctx, tg, cdpio.Read, cdpio.ReadParams{Handle: handle, Size: pdfChunk})
		if err != nil {
			return nil, err
		}
		if int64(buf.Len()+len(chunk.Data)) > limit {
			return nil, fmt.Errorf("%w: the PDF passed %d MiB", ErrTooLarge, limit>>20)
		}
		buf.Write(chunk.Data)
		if chunk.EOF {
			return buf.Bytes(), nil
		}
	}
}
