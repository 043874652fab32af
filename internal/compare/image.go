package compare

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/bits"
	"strings"
	"unicode"

	"github.com/npugrade/npugrade/internal/notebook"
)

// maxImagePixels bounds what is decoded for hashing: a learner's cell can
// emit an image whose decoded form would exhaust the grader's memory. Larger
// images are compared by size and bytes only.
const maxImagePixels = 16_000_000

// imageTargets picks the decodable image types among the rule's targets;
// the image mode compares image/png when the targets name none (the default
// targets are text).
func imageTargets(targets []string) []string {
	var out []string
	for _, t := range targets {
		if decoderFor(t) != nil {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return []string{"image/png"}
	}
	return out
}

type decodeFuncs struct {
	config func([]byte) (image.Config, error)
	decode func([]byte) (image.Image, error)
}

func decoderFor(mime string) *decodeFuncs {
	switch mime {
	case "image/png":
		return &decodeFuncs{
			func(b []byte) (image.Config, error) { return png.DecodeConfig(bytes.NewReader(b)) },
			func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) },
		}
	case "image/jpeg":
		return &decodeFuncs{
			func(b []byte) (image.Config, error) { return jpeg.DecodeConfig(bytes.NewReader(b)) },
			func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) },
		}
	case "image/gif":
		return &decodeFuncs{
			func(b []byte) (image.Config, error) { return gif.DecodeConfig(bytes.NewReader(b)) },
			func(b []byte) (image.Image, error) { return gif.Decode(bytes.NewReader(b)) },
		}
	}
	return nil
}

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// decodeBase64 reads nbformat's base64 data, which Jupyter may wrap in
// lines and some writers leave unpadded.
func decodeBase64(s string) ([]byte, error) {
	s = stripSpace(s)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b2, err2 := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "=")); err2 == nil {
			return b2, nil
		}
		return nil, fmt.Errorf("decode base64: %w", err)
	}
	return b, nil
}

// placeholder stands for binary data in feedback: its size and an MD5
// prefix, enough to tell two images apart without pasting base64.
func placeholder(mime, data string) string {
	b, err := decodeBase64(data)
	if err != nil {
		return fmt.Sprintf("<%s invalid base64, %d characters>", mime, len(stripSpace(data)))
	}
	sum := md5.Sum(b)
	return fmt.Sprintf("<%s %d bytes md5 %s>", mime, len(b), hex.EncodeToString(sum[:])[:8])
}

func placeholders(mime string, ps []string) string {
	var out []string
	for _, p := range nonEmpty(ps) {
		out = append(out, placeholder(mime, p))
	}
	return strings.Join(out, "\n")
}

type decodedImage struct {
	raw    []byte
	cfg    image.Config
	hash   uint64
	hashed bool
}

var errNotImage = errors.New("not a decodable image")

func loadImage(mime, data string) (decodedImage, error) {
	dec := decoderFor(mime)
	if dec == nil {
		return decodedImage{}, errNotImage
	}
	raw, err := decodeBase64(data)
	if err != nil {
		return decodedImage{}, err
	}
	cfg, err := dec.config(raw)
	if err != nil {
		return decodedImage{}, fmt.Errorf("decode %s header: %w", mime, err)
	}
	d := decodedImage{raw: raw, cfg: cfg}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxImagePixels {
		return d, nil
	}
	img, err := dec.decode(raw)
	if err != nil {
		return decodedImage{}, fmt.Errorf("decode %s: %w", mime, err)
	}
	d.hash, d.hashed = DHash(img), true
	return d, nil
}

// compareImages implements the image mode: per image target, the images of
// both sides pair up in order and must agree in number, size and
// perceptual hash.
func compareImages(r Rule, exp, act []*notebook.Output, targets []string) []string {
	var msgs []string
	limit := r.maxHashDistance()
	for _, t := range targets {
		ep, ap := nonEmpty(parts(exp, t)), nonEmpty(parts(act, t))
		switch {
		case len(ep) == 0 && len(ap) == 0:
			msgs = append(msgs, fmt.Sprintf("no %s output on either side: the reference has no image to compare with (an error in the exercise)", t))
			continue
		case len(ap) == 0:
			msgs = append(msgs, "no output on "+t)
			continue
		case len(ep) == 0:
			msgs = append(msgs, "unexpected output on "+t+" (the expected output has none)")
			continue
		case len(ep) != len(ap):
			msgs = append(msgs, fmt.Sprintf("%s: expected %d %s, got %d", t, len(ep), plural(len(ep), "image", "images"), len(ap)))
			continue
		}
		for i := range ep {
			if m := compareImage(r, t, i+1, ep[i], ap[i], limit); m != "" {
				msgs = append(msgs, m)
			}
		}
	}
	return msgs
}

func compareImage(r Rule, mime string, n int, expData, actData string, limit int) string {
	e, err := loadImage(mime, expData)
	if err != nil {
		return fmt.Sprintf("%s: the reference image %d cannot be read (an error in the exercise)", mime, n)
	}
	a, err := loadImage(mime, actData)
	if err != nil {
		return fmt.Sprintf("%s: image %d of the output is not a valid %s image", mime, n, strings.TrimPrefix(mime, "image/"))
	}
	if bytes.Equal(e.raw, a.raw) {
		return ""
	}
	if e.cfg.Width != a.cfg.Width || e.cfg.Height != a.cfg.Height {
		m := fmt.Sprintf("%s: image %d is %dx%d pixels, not the expected size", mime, n, a.cfg.Width, a.cfg.Height)
		if r.ShowExpected {
			m += fmt.Sprintf(" (%dx%d)", e.cfg.Width, e.cfg.Height)
		}
		return m
	}
	if !e.hashed || !a.hashed {
		return fmt.Sprintf("%s: image %d differs from the expected image and is too large to compare perceptually", mime, n)
	}
	if d := bits.OnesCount64(e.hash ^ a.hash); d > limit {
		return fmt.Sprintf("%s: image %d differs from the expected image (perceptual hash distance %d, at most %d allowed)", mime, n, d, limit)
	}
	return ""
}

// DHash returns the 64-bit difference hash of img: the image is shrunk to
// 9x8 cells of average luminance (transparent pixels count as white, as a
// notebook shows them on a white page), and bit k is set when a cell is
// darker than its right neighbour. Re-encoding, compression noise and small
// rendering changes move few bits; a different plot moves many. The hash is
// the standard dHash, so distances are comparable with other tools'.
func DHash(img image.Image) uint64 {
	const cols, rows = 9, 8
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 {
		return 0
	}
	var cell [rows][cols]float64
	for cy := range rows {
		y0 := b.Min.Y + cy*h/rows
		y1 := max(b.Min.Y+(cy+1)*h/rows, y0+1)
		for cx := range cols {
			x0 := b.Min.X + cx*w/cols
			x1 := max(b.Min.X+(cx+1)*w/cols, x0+1)
			// At most 32x32 samples per cell: the average of a large cell
			// does not need every pixel, and At is an interface call.
			sx, sy := max(1, (x1-x0)/32), max(1, (y1-y0)/32)
			var sum float64
			var count int
			for y := y0; y < y1 && y < b.Max.Y; y += sy {
				for x := x0; x < x1 && x < b.Max.X; x += sx {
					sum += luminance(img, x, y)
					count++
				}
			}
			if count > 0 {
				cell[cy][cx] = sum / float64(count)
			}
		}
	}
	var hash uint64
	for y := range rows {
		for x := range cols - 1 {
			hash <<= 1
			if cell[y][x] < cell[y][x+1] {
				hash |= 1
			}
		}
	}
	return hash
}

// luminance is the Rec. 601 luma of the pixel composited over white, in
// [0, 65535].
func luminance(img image.Image, x, y int) float64 {
	r, g, b, a := img.At(x, y).RGBA() // premultiplied by alpha
	white := float64(0xffff - a)
	return 0.299*(float64(r)+white) + 0.587*(float64(g)+white) + 0.114*(float64(b)+white)
}
