package rendition

import (
	"context"
	"fmt"

	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
)

// Preview is an image rendered for a look, never stored.
type Preview struct {
	Data          []byte
	Format        imageparams.Format
	Width, Height int
}

// Preview renders the parameters as an image of the organization would be
// rendered (the same defaults, request, proxy, engine and conversions), under ctx
// alone: when ctx ends the render stops and its tab's slot frees. Nothing
// is kept: no record, no file, no flight other requests could join, no
// render lease, no charge. A render failure is the *apierr.Error a GET of
// such an image answers.
func (s *Service) Preview(ctx context.Context, o *org.Org, p *imageparams.Params) (*Preview, error) {
	img := &Image{OrgID: o.ID, Params: *p}
	if img.Params.MaxWait == 0 { // as Create does
		img.Params.MaxWait = o.PlanInfo().MaxWaitCap
	}
	pdf := p.Format == imageparams.FormatPDF
	req := renderRequest(img, pdf)
	err := s.route(ctx, img, req)
	if err != nil {
		return nil, previewError(err)
	}
	res, err := s.cfg.Engine.Render(ctx, req)
	if err != nil {
		return nil, previewError(err)
	}
	out := &Preview{Data: res.Data, Format: p.Format, Width: res.Width, Height: res.Height}
	switch p.Format {
	case imageparams.FormatJPG:
		out.Data, err = imaging.ToJPEG(res.Data)
	case imageparams.FormatWebP:
		out.Data, err = imaging.ToWebP(res.Data)
	case imageparams.FormatPNG, imageparams.FormatPDF:
	default:
		err = fmt.Errorf("rendition: preview format %q", p.Format)
	}
	if err != nil {
		return nil, fmt.Errorf("rendition: preview conversion to %s: %w", p.Format, err)
	}
	return out, nil
}

// previewError is the answer to a failed preview render, as classify maps
// it for a GET; nothing is recorded.
func previewError(err error) error {
	f, _ := classify(err)
	return apierrFor(f, err)
}
