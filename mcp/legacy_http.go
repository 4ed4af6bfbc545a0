package mcp

import (
	"context"
	"encoding/json"

	"net/http"
	"strconv"
	"strings"
	"time"
)

// HeaderSessionID is the legacy session header.
const HeaderSessionID = "Mcp-Session-Id"

// LegacyOptions configure the serving of initialize-based (2025-11-25 and
// earlier) clients on the same endpoint.
type LegacyOptions struct {
	// Disable answers legacy clients as a modern-only server would.
	Disable bool
	// Sessions bounds live sessions: in total (default 10,000), per client
	// address (default 1,000) and per caller (default 100). When a limit is
	// reached, the oldest session under it that never sent a second message
	// is closed to make room; when there is none, initialize is refused
	// (HTTP 429 for the per-address and per-caller limits, 503 for the
	// total) with an error naming the limit.
	Sessions Limits
	// IdleTimeout ends a session unused for this long (default 30 min); a
	// session with a request in flight or an open GET stream is in use.
	IdleTimeout time.Duration
}

// legacyRoute decides whether a POST belongs to a legacy session: a modern
// MCP-Protocol-Version header always means modern; otherwise a session id,
// or an initialize without modern _meta, means legacy.
func (h *httpHandler) legacyRoute(r *http.Request, msg *message) bool {
	if h.opts.Legacy.Disable {
		return false
	}
	if hv := r.Header.Get(HeaderProtocolVersion); hv != "" && !isLegacyVersion(hv) {
		return false
	}
	if r.Header.Get(HeaderSessionID) != "" {
		return true
	}
	return msg.method == "initialize" && !msg.hasModernMeta()
}

// looksLegacy reports whether a request is of an initialize-based client:
// no modern _meta, and no MCP-Protocol-Version header or a legacy one.
func looksLegacy(r *http.Request, msg *message) bool {
	if hv := r.Header.Get(HeaderProtocolVersion); hv != "" && !isLegacyVersion(hv) {
		return false
	}
	return !msg.hasModernMeta()
}

// errLegacyDisabled answers a legacy client of a server that serves only
// 2026-07-28, naming the version it asked for when it said.
func errLegacyDisabled(r *http.Request, msg *message) *Error {
	requested := r.Header.Get(HeaderProtocolVersion)
	if requested == "" && msg.method == "initialize" {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(msg.params, &p)
		requested = p.ProtocolVersion
	}
	return NewError(CodeUnsupportedProtocolVersion,
		"Unsupported protocol version: this server serves only "+ProtocolVersion+
			"; the initialize-based revisions (2025-11-25 and earlier) are turned off",
		map[string]any{"supported": []string{ProtocolVersion}, "requested": requested})
}

// serveLegacyPOST serves one POSTed message of a legacy client.
func (h *httpHandler) serveLegacyPOST(w http.ResponseWriter, r *http.Request, st *httpStream, msg *message) {
	if msg.method == "initialize" && r.Header.Get(HeaderSessionID) == "" {
		if msg.isNotification() {
			writeJSONError(w, http.StatusBadRequest, nil, NewError(CodeInvalidRequest, "Invalid Request: initialize must be a request", nil))
			return
		}
		_, ob := h.srv.observe(r.Context(), msg, "http", LatestLegacyVersion)
		sess, res, jerr := h.srv.newSession(msg.params, PrincipalFrom(r.Context()))
		if jerr == nil {
			ob.setVersion(sess.version)
			if jerr = h.sessions.add(sess, holderOf(r, h.opts.TrustedProxies)); jerr != nil {
				sess.close()
				w.Header().Set("Retry-After", retryAfter)
			}
		}
		ob.end(res, jerr)
		if jerr != nil {
			writeJSONError(w, jerr.HTTPStatus(), msg.id, jerr)
			return
		}
		w.Header().Set(HeaderSessionID, sess.id)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(appendResponse(nil, msg.id, res))
		return
	}
	request := !msg.response && !msg.isNotification()
	sess := h.sessions.get(r.Header.Get(HeaderSessionID), PrincipalFrom(r.Context()), request)
	if sess == nil {
		if request {
			_, ob := h.srv.observe(r.Context(), msg, "http", legacyVersion(r.Header.Get(HeaderProtocolVersion)))
			defer ob.end(nil, errSessionNotFound())
		}
		writeJSONError(w, http.StatusNotFound, msg.id, errSessionNotFound())
		return
	}
	switch {
	case msg.response:
		sess.deliver(msg)
		w.WriteHeader(http.StatusAccepted)
		return
	case msg.isNotification():
		if msg.method == "notifications/cancelled" {
			sess.cancelRequest(msg.params)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// Deferred first, so run last: the message goes back to the pool once
	// the request is answered, observed and untracked (see putMessage; the
	// answer's buffer likewise, see call.resp).
	defer putMessage(msg)
	resp := getBuf()
	defer putBuf(resp)
	st.resp = resp
	defer h.sessions.end(sess) // in use since get
	ctx, ob := h.srv.observe(r.Context(), msg, "http", sess.version)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess.track(msg.id, cancel)
	defer sess.untrack(msg.id)
	res, jerr := sess.serve(ctx, msg, st, ob, resp)
	defer ob.end(res, jerr)
	if jerr != nil {
		jerr.status = 0
	}
	st.finish(msg.id, res, jerr)
}

func errSessionNotFound() *Error {
	return NewError(CodeInvalidRequest, "Session not found: initialize a new session", nil)
}

// serveLegacyGET is a session's standalone SSE stream: list changes and
// resource updates, each with an event id; Last-Event-ID replays what the
// client missed (as far as the session remembers).
func (h *httpHandler) serveLegacyGET(w http.ResponseWriter, r *http.Request) {
	sess := h.sessions.get(r.Header.Get(HeaderSessionID), PrincipalFrom(r.Context()), true)
	if sess == nil {
		writeJSONError(w, http.StatusNotFound, nil, NewError(CodeInvalidRequest, "Session not found: initialize a new session", nil))
		return
	}
	defer h.sessions.end(sess)
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	sess.mu.Lock()
	prev := sess.streamStop
	sess.streamStop = stop
	sess.mu.Unlock()
	if prev != nil {
		prev() // one GET stream per session: the newest wins
	}
	st := &httpStream{w: w, rc: *http.NewResponseController(w), timeout: h.opts.WriteTimeout}
	_ = st.rc.SetReadDeadline(time.Time{})
	rc := &st.rc
	st.mu.Lock()
	st.startSSE()
	err := rc.Flush()
	st.mu.Unlock()
	if err != nil {
		return
	}
	write := func(ev sessionEvent) error {
		st.mu.Lock()
		defer st.mu.Unlock()
		_ = rc.SetWriteDeadline(time.Now().Add(st.timeout))
		b := make([]byte, 0, len(ev.msg)+32)
		b = append(b, "id: "...)
		b = strconv.AppendInt(b, ev.id, 10)
		b = append(b, "\ndata: "...)
		b = append(append(b, ev.msg...), "\n\n"...)
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if last, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil {
		for _, ev := range sess.eventsAfter(last) {
			if write(ev) != nil {
				return
			}
		}
	}
	for _, msg := range sess.pendingNotifications() { // what arrived while no stream was open
		if write(sess.nextEvent(msg)) != nil {
			return
		}
	}
	keepalive := time.NewTicker(h.srv.opts.KeepAlive)
	defer keepalive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sess.done:
			return
		case <-h.srv.listeners.done:
			return
		case <-keepalive.C:
			if st.keepalive() != nil {
				return
			}
		case <-sess.sub.wake:
			for _, msg := range sess.pendingNotifications() {
				if write(sess.nextEvent(msg)) != nil {
					return
				}
			}
		}
	}
}

// serveLegacyDELETE ends a session.
func (h *httpHandler) serveLegacyDELETE(w http.ResponseWriter, r *http.Request) {
	if !h.sessions.remove(r.Header.Get(HeaderSessionID), PrincipalFrom(r.Context())) {
		writeJSONError(w, http.StatusNotFound, nil, NewError(CodeInvalidRequest, "Session not found", nil))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// In-flight requests of a session, so notifications/cancelled can stop them.

func (sess *session) track(id json.RawMessage, cancel context.CancelFunc) {
	sess.mu.Lock()
	if sess.inflight == nil {
		sess.inflight = map[string]context.CancelFunc{}
	}
	sess.inflight[string(id)] = cancel
	sess.mu.Unlock()
}

func (sess *session) untrack(id json.RawMessage) {
	sess.mu.Lock()
	delete(sess.inflight, string(id))
	sess.mu.Unlock()
}

func (sess *session) cancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return
	}
	sess.mu.Lock()
	cancel := sess.inflight[strings.TrimSpace(string(p.RequestID))]
	sess.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
