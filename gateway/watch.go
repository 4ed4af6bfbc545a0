package gateway

import (
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// A specWatcher tells when an API's document may have changed: a file is
// watched (its directory, since editors replace files by renaming a new one
// over them), a URL is polled with If-None-Match and If-Modified-Since. It
// only signals; the reload that follows reads the document again and
// decides whether anything changed.
type specWatcher struct {
	logger   *slog.Logger
	client   *http.Client
	interval time.Duration
	debounce time.Duration
	changed  func(spec string)
}

// watch runs until ctx ends, calling w.changed(spec) for each of specs that
// changes (at most once per debounce period for a file). A spec that can
// be neither watched nor polled ("-", the demo) is skipped.
func (w *specWatcher) watch(ctx context.Context, specs []string) error {
	var files []string
	var wg sync.WaitGroup
	for _, s := range specs {
		switch {
		case strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://"):
			wg.Go(func() { w.poll(ctx, s) })
		case s == "-" || s == "demo" || s == "":
		default:
			files = append(files, s)
		}
	}
	defer wg.Wait()
	if len(files) == 0 {
		<-ctx.Done()
		return nil
	}
	return w.watchFiles(ctx, files)
}

func (w *specWatcher) watchFiles(ctx context.Context, files []string) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fw.Close()
	byPath := map[string]string{} // absolute path → spec as configured
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		byPath[abs] = f
		if err := fw.Add(filepath.Dir(abs)); err != nil {
			return err
		}
	}
	pending := map[string]bool{}
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if spec, watched := byPath[filepath.Clean(ev.Name)]; watched && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename) != 0 {
				pending[spec] = true
				fire = time.After(w.debounce)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			w.logger.Warn("watching the OpenAPI documents", "err", err)
		case <-fire:
			for spec := range pending {
				w.changed(spec)
			}
			clear(pending)
		}
	}
}

// poll asks for url every interval, conditionally, and signals a change
// when the body's digest differs from the last one seen.
func (w *specWatcher) poll(ctx context.Context, url string) {
	var etag, modified string
	var last [sha256.Size]byte
	seen := false
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		if modified != "" {
			req.Header.Set("If-Modified-Since", modified)
		}
		resp, err := w.client.Do(req)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			w.logger.Warn("polling an OpenAPI document", "spec", url, "err", err)
		case resp.StatusCode == http.StatusOK:
			h := sha256.New()
			_, err := io.Copy(h, io.LimitReader(resp.Body, 256<<20))
			resp.Body.Close()
			var sum [sha256.Size]byte
			copy(sum[:], h.Sum(nil))
			if err == nil {
				if seen && sum != last {
					w.changed(url)
				}
				last, seen = sum, true
				etag, modified = resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
			}
		default:
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
