package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// pathID parses a positive integer path parameter, answering 400 if it is
// not one.
func pathID(w http.ResponseWriter, r *http.Request, name string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil || id <= 0 {
		problem(w, http.StatusBadRequest, fmt.Sprintf("%s must be a positive integer", name))
		return 0, false
	}
	return id, true
}

// mediaType returns the request's media type, lower-cased, without
// parameters ("" if absent or malformed).
func mediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// requireMedia answers 415 unless the request has one of the media types.
func requireMedia(w http.ResponseWriter, r *http.Request, types ...string) bool {
	mt := mediaType(r)
	for _, t := range types {
		if mt == t {
			return true
		}
	}
	problem(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type must be %s", strings.Join(types, " or ")))
	return false
}

// decodeJSON strictly decodes one JSON value into v (unknown fields and
// trailing data rejected), answering 413 or 400 on failure.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON value")
	}
	if err == nil {
		return true
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		problem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body exceeds %d bytes", MaxBodyBytes))
		return false
	}
	problem(w, http.StatusBadRequest, fmt.Sprintf("malformed JSON body: %v", err))
	return false
}

// validationProblem answers 422 for a validation error.
func validationProblem(w http.ResponseWriter, err error) {
	problem(w, http.StatusUnprocessableEntity, err.Error())
}

// ---- pets ----

func (a *API) listPets(w http.ResponseWriter, r *http.Request, _ principal) {
	q := r.URL.Query()
	limit := 20
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			problem(w, http.StatusBadRequest, "limit must be an integer from 1 to 100")
			return
		}
		limit = n
	}
	var after int64
	if c := q.Get("cursor"); c != "" {
		id, err := decodeCursor(c)
		if err != nil {
			problem(w, http.StatusBadRequest, fmt.Sprintf("invalid cursor: %v", err))
			return
		}
		after = id
	}
	var tags []string
	if s := q.Get("tags"); s != "" {
		for t := range strings.SplitSeq(s, ",") {
			if t != "" {
				tags = append(tags, t)
			}
		}
	}
	var fSpecies, fStatus string
	var fCategory int64
	for k, vs := range q {
		name, ok := strings.CutPrefix(k, "filter[")
		if !ok {
			continue
		}
		name, ok = strings.CutSuffix(name, "]")
		v := vs[0]
		switch {
		case ok && name == "species":
			if !validSpecies(v) {
				problem(w, http.StatusBadRequest, fmt.Sprintf("filter[species] must be one of dog, cat, bird, fish (got %q)", v))
				return
			}
			fSpecies = v
		case ok && name == "status":
			if !validPetStatus(v) {
				problem(w, http.StatusBadRequest, fmt.Sprintf("filter[status] must be one of available, pending, adopted (got %q)", v))
				return
			}
			fStatus = v
		case ok && name == "categoryId":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				problem(w, http.StatusBadRequest, "filter[categoryId] must be a positive integer")
				return
			}
			fCategory = n
		default:
			problem(w, http.StatusBadRequest, fmt.Sprintf("unknown filter %q (known: filter[species], filter[status], filter[categoryId])", k))
			return
		}
	}

	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	n := 0
	var last int64
	more := false
	a.mu.RLock()
	for _, id := range a.sortedPetIDsLocked() {
		if id <= after {
			continue
		}
		rec := a.pets[id]
		p := &rec.pet
		if fSpecies != "" && p.Species != fSpecies || fStatus != "" && p.Status != fStatus ||
			fCategory != 0 && p.CategoryID != fCategory || !hasAllTags(p.Tags, tags) {
			continue
		}
		if n == limit {
			more = true
			break
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(rec.enc)
		n++
		last = id
	}
	a.mu.RUnlock()
	b.WriteByte(']')
	if more {
		b.WriteString(`,"nextCursor":"`)
		b.WriteString(encodeCursor(last))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	if rid := r.Header.Get("X-Request-Id"); rid != "" {
		w.Header().Set("X-Request-Id", rid)
	}
	writeRaw(w, http.StatusOK, "application/json", b.Bytes())
}

func hasAllTags(have, want []string) bool {
	for _, t := range want {
		found := false
		for _, h := range have {
			if h == t {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// readPetInput reads and validates a JSON PetInput body, answering the
// problem itself when there is one.
func (a *API) readPetInput(w http.ResponseWriter, r *http.Request) (PetInput, bool) {
	var in PetInput
	if !requireMedia(w, r, "application/json") || !decodeJSON(w, r, &in) {
		return in, false
	}
	if err := a.validateInput(&in); err != nil {
		validationProblem(w, err)
		return in, false
	}
	return in, true
}

func (a *API) createPet(w http.ResponseWriter, r *http.Request, _ principal) {
	in, ok := a.readPetInput(w, r)
	if !ok {
		return
	}
	now := a.now().UTC()
	a.mu.Lock()
	if a.nameTakenLocked(in.Name, 0) {
		a.mu.Unlock()
		problem(w, http.StatusConflict, fmt.Sprintf("a pet named %q already exists", in.Name))
		return
	}
	a.nextPet++
	p := Pet{ID: a.nextPet, Version: 1, CreatedAt: now, UpdatedAt: now}
	applyInput(&p, &in)
	rec := newRecord(p, nil, "")
	a.pets[p.ID] = rec
	a.mu.Unlock()
	w.Header().Set("Location", "/pets/"+strconv.FormatInt(p.ID, 10))
	w.Header()["Etag"] = rec.etag
	writeRaw(w, http.StatusCreated, "application/json", rec.enc)
}

func applyInput(p *Pet, in *PetInput) {
	p.Name, p.Species, p.Status = in.Name, in.Species, in.Status
	if p.Status == "" {
		p.Status = "available"
	}
	p.Tags, p.CategoryID, p.Details = in.Tags, in.CategoryID, in.Details
}

// getPet is the hot path benchmarks hammer: one map lookup under a read
// lock and a write of pre-encoded bytes and pre-built header values.
func (a *API) getPet(w http.ResponseWriter, r *http.Request, _ principal) {
	id, ok := pathID(w, r, "petId")
	if !ok {
		return
	}
	a.mu.RLock()
	rec := a.pets[id]
	a.mu.RUnlock()
	if rec == nil {
		problem(w, http.StatusNotFound, "no pet with id "+strconv.FormatInt(id, 10))
		return
	}
	h := w.Header()
	h["Content-Type"] = a.ctJSON
	h["Content-Length"] = rec.clen
	h["Etag"] = rec.etag
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(rec.enc)
}

func (a *API) replacePet(w http.ResponseWriter, r *http.Request, _ principal) {
	id, ok := pathID(w, r, "petId")
	if !ok {
		return
	}
	in, ok := a.readPetInput(w, r)
	if !ok {
		return
	}
	now := a.now().UTC()
	a.mu.Lock()
	old := a.pets[id]
	if old == nil {
		a.mu.Unlock()
		problem(w, http.StatusNotFound, "no pet with id "+strconv.FormatInt(id, 10))
		return
	}
	if a.nameTakenLocked(in.Name, id) {
		a.mu.Unlock()
		problem(w, http.StatusConflict, fmt.Sprintf("a pet named %q already exists", in.Name))
		return
	}
	p := old.pet
	applyInput(&p, &in)
	p.Version++
	p.UpdatedAt = now
	rec := newRecord(p, old.photo, old.caption)
	a.pets[id] = rec
	a.mu.Unlock()
	w.Header()["Etag"] = rec.etag
	writeRaw(w, http.StatusOK, "application/json", rec.enc)
}

func (a *API) updatePet(w http.ResponseWriter, r *http.Request, _ principal) {
	id, ok := pathID(w, r, "petId")
	if !ok || !requireMedia(w, r, "application/merge-patch+json", "application/json") {
		return
	}
	var in PetPatch
	if !decodeJSON(w, r, &in) {
		return
	}
	ifMatch := r.Header.Get("If-Match")
	now := a.now().UTC()
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.pets[id]
	if old == nil {
		problem(w, http.StatusNotFound, "no pet with id "+strconv.FormatInt(id, 10))
		return
	}
	if ifMatch != "" && ifMatch != "*" && ifMatch != old.etag[0] {
		problem(w, http.StatusPreconditionFailed, fmt.Sprintf("If-Match %s does not match the current ETag %s", ifMatch, old.etag[0]))
		return
	}
	p := old.pet
	in2 := PetInput{Name: p.Name, Species: p.Species, Status: p.Status, Tags: p.Tags, CategoryID: p.CategoryID, Details: p.Details}
	if in.Name != nil {
		in2.Name = *in.Name
	}
	if in.Status != nil {
		in2.Status = *in.Status
		if in2.Status == "" {
			in2.Status = "-" // an explicit empty status is invalid, not "default"
		}
	}
	if in.Tags != nil {
		in2.Tags = *in.Tags
	}
	if in.CategoryID != nil {
		in2.CategoryID = *in.CategoryID
		if in2.CategoryID == 0 {
			in2.CategoryID = -1
		}
	}
	if in.Details != nil {
		in2.Details = in.Details
	}
	if err := a.validateInput(&in2); err != nil {
		validationProblem(w, err)
		return
	}
	if a.nameTakenLocked(in2.Name, id) {
		problem(w, http.StatusConflict, fmt.Sprintf("a pet named %q already exists", in2.Name))
		return
	}
	applyInput(&p, &in2)
	p.Version++
	p.UpdatedAt = now
	rec := newRecord(p, old.photo, old.caption)
	a.pets[id] = rec
	w.Header()["Etag"] = rec.etag
	writeRaw(w, http.StatusOK, "application/json", rec.enc)
}

func (a *API) deletePet(w http.ResponseWriter, r *http.Request, _ principal) {
	id, ok := pathID(w, r, "petId")
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pets[id] == nil {
		problem(w, http.StatusNotFound, "no pet with id "+strconv.FormatInt(id, 10))
		return
	}
	for _, o := range a.orders {
		if o.PetID == id && o.Status == "placed" {
			problem(w, http.StatusConflict, fmt.Sprintf("pet %d has placed order %d; cancel it first", id, o.ID))
			return
		}
	}
	delete(a.pets, id)
	w.WriteHeader(http.StatusNoContent)
}

// ---- photos ----

// storePhoto validates and stores a PNG photo for pet id.
func (a *API) storePhoto(w http.ResponseWriter, id int64, data []byte, caption string, status int) {
	if !isPNG(data) {
		problem(w, http.StatusUnprocessableEntity, "the photo must be a PNG image")
		return
	}
	if len([]rune(caption)) > 200 {
		problem(w, http.StatusUnprocessableEntity, "caption must be at most 200 characters")
		return
	}
	now := a.now().UTC()
	a.mu.Lock()
	old := a.pets[id]
	if old == nil {
		a.mu.Unlock()
		problem(w, http.StatusNotFound, "no pet with id "+strconv.FormatInt(id, 10))
		return
	}
	p := old.pet
	p.Version++
	p.UpdatedAt = now
	a.pets[id] = newRecord(p, data, caption)
	a.mu.Unlock()
	writeJSON(w, status, PhotoInfo{PetID: id, Size: len(data), ContentType: "image/png", Caption: caption})
}

func (a *API) uploadPetPhoto(w http.ResponseWriter, r *http.Request, _ principal) {
	id, ok := pathID(w, r, "petId")
	if !ok || !requireMedia(w, r, "multipart/form-data") {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	mr, err := r.MultipartReader()
	if err != nil {
		problem(w, http.StatusBadRequest, fmt.Sprintf("malformed multipart body: %v", err))
		return
	}
	var data []byte
	var caption string
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			bodyError(w, fmt.Errorf("read multipart part: %w", err))
			return
		}
		b, err := io.ReadAll(part)
		if err != nil {
			bodyError(w, fmt.Errorf("read part %q: %w", part.FormName(), err))
			return
		}
		switch part.FormName() {
		case "file":
			data = b
		case "caption":
			caption = string(b)
		}
	}
	if data == nil {
		problem(w, http.StatusUnprocessableEntity, `the multipart body needs a "file" part`)
		return
	}
	a.storePhoto(w, id, data, caption, http.StatusCreated)
}

// bodyError answers 413 for an oversized body, 400 otherwise.
func bodyError(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		problem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body exceeds %d bytes", MaxBodyBytes))
		return
	}
	problem(w, http.StatusBadRequest, err.Error())
}

func (a *API) putPetPhoto(w http.ResponseWriter, r *http.Request, _ principal) {
	id, ok := pathID(w, r, "petId")
	if !ok || !requireMedia(w, r, "application/octet-stream", "image/png") {
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		bodyError(w, fmt.Errorf("read body: %w", err))
		return
	}
	a.storePhoto(w, id, data, r.URL.Query().Get("caption"), http.StatusOK)
}

func (a *API) getPetPhoto(w http.ResponseWriter, r *http.Request, _ principal) {
	id, ok := pathID(w, r, "petId")
	if !ok {
		return
	}
	a.mu.RLock()
	rec := a.pets[id]
	a.mu.RUnlock()
	switch {
	case rec == nil:
		problem(w, http.StatusNotFound, "no pet with id "+strconv.FormatInt(id, 10))
	case rec.photo == nil:
		problem(w, http.StatusNotFound, fmt.Sprintf("pet %d has no photo", id))
	default:
		writeRaw(w, http.StatusOK, "image/png", rec.photo)
	}
}

// ---- categories ----

func (a *API) listCategories(w http.ResponseWriter, _ *http.Request, _ principal) {
	writeJSON(w, http.StatusOK, a.categories)
}

// ---- orders ----

func (a *API) createOrder(w http.ResponseWriter, r *http.Request, _ principal) {
	if !requireMedia(w, r, "application/x-www-form-urlencoded") {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		bodyError(w, fmt.Errorf("malformed form body: %w", err))
		return
	}
	petID, err := strconv.ParseInt(r.PostForm.Get("petId"), 10, 64)
	if err != nil || petID < 1 {
		problem(w, http.StatusUnprocessableEntity, "petId is required and must be a positive integer")
		return
	}
	note := r.PostForm.Get("note")
	if len([]rune(note)) > 200 {
		problem(w, http.StatusUnprocessableEntity, "note must be at most 200 characters")
		return
	}
	express := false
	if s := r.PostForm.Get("express"); s != "" {
		express, err = strconv.ParseBool(s)
		if err != nil || (s != "true" && s != "false") {
			problem(w, http.StatusUnprocessableEntity, "express must be true or false")
			return
		}
	}
	now := a.now().UTC()
	a.mu.Lock()
	rec := a.pets[petID]
	if rec == nil {
		a.mu.Unlock()
		problem(w, http.StatusUnprocessableEntity, fmt.Sprintf("no pet with id %d", petID))
		return
	}
	if rec.pet.Status != "available" {
		a.mu.Unlock()
		problem(w, http.StatusConflict, fmt.Sprintf("pet %d is %s, not available", petID, rec.pet.Status))
		return
	}
	a.nextOrder++
	o := &Order{ID: a.nextOrder, PetID: petID, Status: "placed", Note: note, Express: express, CreatedAt: now}
	a.orders[o.ID] = o
	a.setPetStatusLocked(rec, "pending", now)
	out := *o
	a.mu.Unlock()
	w.Header().Set("Location", "/orders/"+strconv.FormatInt(out.ID, 10))
	writeJSON(w, http.StatusCreated, out)
}

// setPetStatusLocked replaces rec by a copy with the new status. Caller
// holds a.mu for writing.
func (a *API) setPetStatusLocked(rec *petRecord, status string, now time.Time) {
	p := rec.pet
	p.Status = status
	p.Version++
	p.UpdatedAt = now
	a.pets[p.ID] = newRecord(p, rec.photo, rec.caption)
}

func (a *API) getOrder(w http.ResponseWriter, r *http.Request, _ principal) {
	id, ok := pathID(w, r, "orderId")
	if !ok {
		return
	}
	a.mu.RLock()
	o := a.orders[id]
	var out Order
	if o != nil {
		out = *o
	}
	a.mu.RUnlock()
	if o == nil {
		problem(w, http.StatusNotFound, "no order with id "+strconv.FormatInt(id, 10))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) cancelOrder(w http.ResponseWriter, r *http.Request, _ principal) {
	id, ok := pathID(w, r, "orderId")
	if !ok {
		return
	}
	now := a.now().UTC()
	a.mu.Lock()
	o := a.orders[id]
	if o == nil {
		a.mu.Unlock()
		problem(w, http.StatusNotFound, "no order with id "+strconv.FormatInt(id, 10))
		return
	}
	if o.Status == "cancelled" {
		a.mu.Unlock()
		problem(w, http.StatusConflict, fmt.Sprintf("order %d is already cancelled", id))
		return
	}
	o.Status = "cancelled"
	if rec := a.pets[o.PetID]; rec != nil && rec.pet.Status == "pending" {
		a.setPetStatusLocked(rec, "available", now)
	}
	out := *o
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// ---- users ----

func (a *API) getCurrentUser(w http.ResponseWriter, r *http.Request, p principal) {
	u := User{Subject: p.subject, Authenticated: p.authenticated}
	if c, err := r.Cookie("theme"); err == nil {
		if c.Value != "light" && c.Value != "dark" {
			problem(w, http.StatusBadRequest, fmt.Sprintf("cookie theme must be light or dark (got %q)", c.Value))
			return
		}
		u.Preferences.Theme = c.Value
	}
	writeJSON(w, http.StatusOK, u)
}

// ---- reports ----

// ReportInput is the body of createReport (schema ReportInput).
type ReportInput struct {
	Kind string `json:"kind"`
}

func (a *API) createReport(w http.ResponseWriter, r *http.Request, _ principal) {
	if !requireMedia(w, r, "application/json") {
		return
	}
	var in ReportInput
	if !decodeJSON(w, r, &in) {
		return
	}
	if in.Kind != "inventory" && in.Kind != "orders" {
		problem(w, http.StatusUnprocessableEntity, fmt.Sprintf("kind must be inventory or orders (got %q)", in.Kind))
		return
	}
	now := a.now().UTC()
	a.mu.Lock()
	res := ReportResult{ByStatus: map[string]int{}}
	if in.Kind == "inventory" {
		for _, rec := range a.pets {
			res.Total++
			res.ByStatus[rec.pet.Status]++
		}
	} else {
		for _, o := range a.orders {
			res.Total++
			res.ByStatus[o.Status]++
		}
	}
	a.nextReport++
	rep := &report{
		Report: Report{ID: a.nextReport, Kind: in.Kind, Status: "running", CreatedAt: now},
		doneAt: now.Add(a.reportDelay),
		result: res,
	}
	a.reports[rep.ID] = rep
	out := rep.Report
	a.mu.Unlock()
	w.Header().Set("Location", "/reports/"+strconv.FormatInt(out.ID, 10))
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusAccepted, out)
}

func (a *API) getReport(w http.ResponseWriter, r *http.Request, _ principal) {
	id, ok := pathID(w, r, "reportId")
	if !ok {
		return
	}
	a.mu.RLock()
	rep := a.reports[id]
	a.mu.RUnlock()
	if rep == nil {
		problem(w, http.StatusNotFound, "no report with id "+strconv.FormatInt(id, 10))
		return
	}
	out := rep.Report // reports are immutable once stored
	if !a.now().Before(rep.doneAt) {
		out.Status = "done"
		res := rep.result
		out.Result = &res
	} else {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, http.StatusOK, out)
}

// ---- redirect ----

func (a *API) redirectMe(w http.ResponseWriter, r *http.Request, _ principal) {
	http.Redirect(w, r, "/users/me", http.StatusFound)
}
