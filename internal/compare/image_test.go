package compare

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/bits"
	"testing"

	"github.com/npugrade/npugrade/internal/notebook"
)

func solid(w, h int, r, g, b uint8) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{r, g, b, 255})
		}
	}
	return img
}

// gradient is dark on the left and light on the right (or the reverse).
func gradient(w, h int, reverse bool) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			v := uint8(x * 255 / max(1, w-1))
			if reverse {
				v = 255 - v
			}
			img.Set(x, y, color.NRGBA{v, v, v, 255})
		}
	}
	return img
}

// plot draws a dark curve on white, like a matplotlib line plot.
func plot(w, h int, f func(x float64) float64) *image.NRGBA {
	img := solid(w, h, 255, 255, 255)
	for x := range w {
		y := int(f(float64(x)/float64(w)) * float64(h-1))
		for dy := -2; dy <= 2; dy++ {
			if yy := y + dy; yy >= 0 && yy < h {
				img.Set(x, yy, color.NRGBA{31, 119, 180, 255})
			}
		}
	}
	return img
}

func pngBase64(t testing.TB, img image.Image) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func pngOut(t testing.TB, img image.Image) *notebook.Output {
	return display("image/png", pngBase64(t, img))
}

func TestImage(t *testing.T) {
	t.Parallel()
	im := Rule{Compare: ModeImage}
	line := plot(64, 48, func(x float64) float64 { return x })
	lineCopy := plot(64, 48, func(x float64) float64 { return x })
	// The same plot with a few pixels off, as another renderer might draw it.
	noisy := plot(64, 48, func(x float64) float64 { return x })
	for i := range 6 {
		noisy.Set(i*7, 40, color.NRGBA{200, 200, 200, 255})
	}
	other := plot(64, 48, func(x float64) float64 { return 1 - x })
	var jbuf bytes.Buffer
	if err := jpeg.Encode(&jbuf, gradient(32, 32, false), &jpeg.Options{Quality: 60}); err != nil {
		t.Fatal(err)
	}
	var gbuf bytes.Buffer
	if err := gif.Encode(&gbuf, gradient(32, 32, true), nil); err != nil {
		t.Fatal(err)
	}
	jpegB64 := base64.StdEncoding.EncodeToString(jbuf.Bytes())
	gifB64 := base64.StdEncoding.EncodeToString(gbuf.Bytes())

	runOutputsCases(t, []outputsCase{
		{"same image", im, outs(pngOut(t, line)), outs(stdout("saved\n"), pngOut(t, lineCopy)), true, ""},
		{"re-encoded with another compression", im, outs(pngOut(t, line)), outs(display("image/png", encodeBest(t, line))), true, ""},
		{"small rendering noise", im, outs(pngOut(t, line)), outs(pngOut(t, noisy)), true, ""},
		{"a different plot", im, outs(pngOut(t, line)), outs(pngOut(t, other)), false, "image/png: image 1 differs from the expected image (perceptual hash distance"},
		{"strict distance", Rule{Compare: ModeImage, MaxHashDistance: -1}, outs(pngOut(t, gradient(40, 40, false))), outs(pngOut(t, gradient(40, 40, true))), false, "at most 0 allowed"},
		{"different size", im, outs(pngOut(t, line)), outs(pngOut(t, plot(128, 96, func(x float64) float64 { return x }))), false, "image/png: image 1 is 128x96 pixels, not the expected size"},
		{"no image", im, outs(pngOut(t, line)), so("oops\n"), false, "no output on image/png"},
		{"unexpected image", im, outs(stdout("x")), outs(pngOut(t, line)), false, "unexpected output on image/png"},
		{"no image anywhere", im, nil, nil, false, "the reference has no image"},
		{"count", im, outs(pngOut(t, line)), outs(pngOut(t, line), pngOut(t, line)), false, "image/png: expected 1 image, got 2"},
		{"second image differs", im, outs(pngOut(t, line), pngOut(t, line)), outs(pngOut(t, line), pngOut(t, other)), false, "image 2 differs"},
		{"invalid png", im, outs(pngOut(t, line)), outs(display("image/png", "bm90IGEgcG5n")), false, "image 1 of the output is not a valid png image"},
		{"invalid base64", im, outs(pngOut(t, line)), outs(display("image/png", "!!!")), false, "not a valid png image"},
		{"broken reference", im, outs(display("image/png", "bm90IGEgcG5n")), outs(pngOut(t, line)), false, "the reference image 1 cannot be read"},
		{"learner raised", im, outs(pngOut(t, line)), outs(pngOut(t, line), raised("RuntimeError", "x")), false, "the cell raised RuntimeError"},
		{"jpeg when targeted", Rule{Compare: ModeImage, Targets: []string{"image/jpeg"}}, outs(display("image/jpeg", jpegB64)), outs(display("image/jpeg", jpegB64)), true, ""},
		{"gif when targeted", Rule{Compare: ModeImage, Targets: []string{"image/gif"}}, outs(display("image/gif", gifB64)), outs(display("image/gif", pngBase64(t, gradient(32, 32, false)))), false, "image/gif: image 1 of the output is not a valid gif image"},
	})
}

func encodeBest(t *testing.T, img image.Image) string {
	t.Helper()
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestDHash(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		a, b    image.Image
		minDist int
		maxDist int
	}{
		{"identical", gradient(50, 30, false), gradient(50, 30, false), 0, 0},
		{"scaled copy", gradient(90, 80, false), gradient(180, 160, false), 0, 2},
		{"mirrored", gradient(50, 30, false), gradient(50, 30, true), 60, 64},
		{"tiny", solid(1, 1, 0, 0, 0), solid(1, 1, 0, 0, 0), 0, 0},
		{"transparent is white", image.NewNRGBA(image.Rect(0, 0, 16, 16)), solid(16, 16, 255, 255, 255), 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := bits.OnesCount64(DHash(tc.a) ^ DHash(tc.b))
			if d < tc.minDist || d > tc.maxDist {
				t.Errorf("distance %d, want %d..%d", d, tc.minDist, tc.maxDist)
			}
		})
	}
}

func TestPlaceholder(t *testing.T) {
	t.Parallel()
	b64 := base64.StdEncoding.EncodeToString([]byte("hello"))
	if got := placeholder("image/png", b64); got != "<image/png 5 bytes md5 5d41402a>" {
		t.Errorf("placeholder = %q", got)
	}
	if got := placeholder("image/png", "%%%"); got != "<image/png invalid base64, 3 characters>" {
		t.Errorf("placeholder = %q", got)
	}
}
