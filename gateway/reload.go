package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gctune"
	"github.com/mcpgate/mcpgate/openapi"
)

// Reload modes (Config.Reload).
const (
	ReloadAuto     = "auto"     // every change is applied
	ReloadAdditive = "additive" // a breaking change is refused, the others applied
	ReloadManual   = "manual"   // changes are applied only when asked (SIGHUP)
)

// ErrReloadRefused is returned when the reload mode refuses a change.
var ErrReloadRefused = errors.New("reload refused")

// Reload reads every API's document again and, when something changed,
// puts the new tools in service: the operator's reload (SIGHUP), which
// applies breaking changes too. cfg, when not nil, is the configuration
// read again; only its APIs take effect live (the other settings need a
// restart, and a warning names those that changed). A failure or a refusal
// is logged here as well as returned.
func (g *Gateway) Reload(ctx context.Context, cfg *Config) error {
	if cfg != nil {
		c, err := cfg.withDefaults()
		if err != nil {
			return g.reloadFailed("asked", fmt.Errorf("reload: %w", err))
		}
		cfg = &c
	}
	return g.reload(ctx, "asked", nil, true, cfg)
}

// reloadGCBudget is how far the heap may grow while a reload runs before
// Go collects (package gctune's Hold; within GOMEMLIMIT, and not when the
// operator set GOGC). A reload of GitHub's document makes about 150 MB of
// short-lived garbage: collected as it is made, it took two or three
// collections, each of which slowed the calls served meanwhile (their p99
// rose 7–22 %); held, one collection after the swap takes it all.
const reloadGCBudget = 256 << 20

// reload rebuilds the APIs whose document (or configuration) changed —
// those of specs, or all when specs is nil — off the request path,
// classifies the change as mcpgate check does, and, when the reload mode
// (or force) allows it, swaps the new catalog in. A document that fails to
// load or generate never replaces a working one.
func (g *Gateway) reload(ctx context.Context, reason string, specs map[string]bool, force bool, cfg *Config) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	if g.cfg.Demo {
		return nil // the built-in demo has no document to read again
	}
	defer gctune.Hold(reloadGCBudget)()
	old := g.current()
	cfgs := make([]APIConfig, len(old.apis))
	for i, a := range old.apis {
		cfgs[i] = a.cfg
	}
	if cfg != nil {
		var err error
		if cfgs, err = cfg.apiConfigs(); err != nil {
			return g.reloadFailed(reason, err)
		}
		g.warnRestartOnly(cfg)
	}
	next, changes, fresh, configChanged, err := g.rebuildAPIs(ctx, old, cfgs, specs)
	if err != nil {
		for _, a := range fresh {
			a.close()
		}
		return g.reloadFailed(reason, err)
	}
	class := openapi.Classify(changes)
	if class == "" && !configChanged && !g.thesaurusChanged(old) {
		for _, a := range fresh {
			a.close()
		}
		g.metrics.reload("unchanged", "")
		return nil
	}
	if why := g.refusal(class, force); why != "" {
		for _, a := range fresh {
			a.close()
		}
		g.metrics.reload("refused", class)
		g.logger.Warn("reload refused: the old tools keep serving", "reason", reason, "class", class, "why", why, "changes", describe(changes))
		return fmt.Errorf("%w: %s", ErrReloadRefused, why)
	}
	cat, ts, err := g.newCatalog(ctx, next)
	if err == nil {
		err = checkCredentialSharing(g.cfg.Auth.Mode, next)
	}
	if err == nil {
		err = g.install(cat, ts)
	}
	if err != nil {
		for _, a := range fresh {
			a.close()
		}
		return g.reloadFailed(reason, err)
	}
	for _, a := range fresh {
		g.track(a)
	}
	if !slices.Equal(specsOf(old.apis), specsOf(next)) {
		select { // the watcher picks the new documents up
		case g.rewatch <- struct{}{}:
		default:
		}
	}
	g.metrics.reload("applied", class)
	g.logger.Info("tools reloaded", "reason", reason, "class", class, "tools", len(cat.tools), "changes", len(changes), "version", cat.version)
	if sig := g.backend.Signals; sig != nil {
		// The other replicas check their documents too.
		if err := sig.Publish(ctx, cat.version); err != nil {
			g.logger.Warn("reload: telling the other replicas failed", "err", err)
		}
	}
	return nil
}

// rebuildAPIs loads again the APIs of cfgs whose document is among specs
// (all when specs is nil) or whose settings changed, and keeps the others.
// It returns the APIs as they would serve, the changes of their tools, the
// APIs it built (to close if they are not put in service), and whether an
// API's settings changed (an API added or removed included).
func (g *Gateway) rebuildAPIs(ctx context.Context, old *catalog, cfgs []APIConfig, specs map[string]bool) (next []*api, changes []openapi.Change, fresh []*api, configChanged bool, err error) {
	byName := map[string]*api{}
	for _, a := range old.apis {
		byName[a.cfg.Name] = a
	}
	for _, c := range cfgs {
		prev := byName[c.Name]
		delete(byName, c.Name)
		same := prev != nil && reflect.DeepEqual(prev.cfg, c)
		if same && specs != nil && !specs[c.Spec] {
			next = append(next, prev)
			continue
		}
		configChanged = configChanged || !same
		if c.Credentials.Mode == "oauth" && (prev == nil || !reflect.DeepEqual(prev.cfg.Credentials, c.Credentials)) {
			return nil, nil, fresh, false, fmt.Errorf("api %s: users' accounts (credentials mode oauth) are configured at start only: restart the gateway", c.label())
		}
		a, err := g.loadAPI(ctx, c)
		if err != nil {
			return nil, nil, fresh, false, err
		}
		fresh = append(fresh, a)
		if err := g.buildProxy(ctx, a); err != nil {
			return nil, nil, fresh, false, err
		}
		if prev != nil {
			changes = append(changes, prefixed(a, openapi.Diff(openapi.NewManifest(prev.result), openapi.NewManifest(a.result)))...)
		} else {
			for _, t := range a.tools {
				changes = append(changes, openapi.Change{Tool: t.Name, Message: "tool added"})
			}
		}
		next = append(next, a)
	}
	for _, gone := range byName { // an API left the configuration: its tools are gone
		configChanged = true
		for _, t := range gone.tools {
			changes = append(changes, openapi.Change{Tool: t.Name, Breaking: true, Message: "tool removed (its API left the configuration)"})
		}
	}
	return next, changes, fresh, configChanged, nil
}

// prefixed names the changes of an API's tools by their served names.
func prefixed(a *api, changes []openapi.Change) []openapi.Change {
	for i := range changes {
		changes[i].Tool = a.toolName(changes[i].Tool)
	}
	return changes
}

// refusal says why the reload mode refuses a change of this class, or "".
func (g *Gateway) refusal(class string, force bool) string {
	switch {
	case force || g.cfg.Reload == ReloadAuto:
		return ""
	case g.cfg.Reload == ReloadManual:
		return "reload is manual: send SIGHUP to apply changes"
	case class == openapi.ClassBreaking:
		return "reload is additive and the change is breaking: fix the document, or send SIGHUP to apply it anyway"
	}
	return ""
}

func (g *Gateway) reloadFailed(reason string, err error) error {
	g.metrics.reload("failed", "")
	g.logger.Error("reload failed: the old tools keep serving", "reason", reason, "err", err)
	return err
}

// describe lists changes for a log line (at most 20).
func describe(changes []openapi.Change) string {
	var b strings.Builder
	for i, c := range changes {
		if i == 20 {
			fmt.Fprintf(&b, "; and %d more", len(changes)-20)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c.String())
	}
	return b.String()
}

// warnRestartOnly names the settings that changed in a configuration read
// again but take effect only at restart.
func (g *Gateway) warnRestartOnly(cfg *Config) {
	a, b := g.cfg, *cfg
	for _, c := range []*Config{&a, &b} {
		c.APIs, c.Spec, c.Upstream, c.Credentials, c.Tools.ToolsConfig = nil, "", "", Credentials{}, ToolsConfig{}
	}
	if !reflect.DeepEqual(a, b) {
		g.logger.Warn("reload: settings other than the APIs (spec, upstream, credentials, tools, apis) changed; they take effect at the next restart")
	}
}

// watch reloads, until ctx ends, whenever an API's document changes (files
// watched, URLs polled) or another replica put a new tool set in service.
// A reload that changed the set of documents starts watching them anew.
func (g *Gateway) watch(ctx context.Context) {
	if g.cfg.Demo {
		return
	}
	if sig := g.backend.Signals; sig != nil {
		go sig.Listen(ctx, func(version string) {
			if version != g.current().version {
				_ = g.reload(ctx, "another replica reloaded", nil, false, nil)
			}
		})
	}
	for ctx.Err() == nil {
		var specs []string
		for _, a := range g.current().apis {
			specs = append(specs, a.cfg.Spec)
		}
		wctx, stop := context.WithCancel(ctx)
		w := &specWatcher{logger: g.logger, client: &http.Client{Timeout: 30 * time.Second}, interval: g.cfg.ReloadInterval,
			debounce: 200 * time.Millisecond, changed: func(spec string) {
				_ = g.reload(ctx, "the document "+spec+" changed", map[string]bool{spec: true}, false, nil)
			}}
		done := make(chan error, 1)
		go func() { done <- w.watch(wctx, specs) }()
		select {
		case <-ctx.Done():
		case <-g.rewatch:
		case err := <-done:
			if err != nil {
				g.logger.Warn("the OpenAPI documents are not watched: a change takes a restart or SIGHUP", "err", err)
			}
			stop()
			return
		}
		stop()
		<-done
	}
}

// specsOf are the documents of apis, in order.
func specsOf(apis []*api) []string {
	var out []string
	for _, a := range apis {
		out = append(out, a.cfg.Spec)
	}
	return out
}
