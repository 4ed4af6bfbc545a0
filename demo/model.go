package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"slices"
	"strconv"
	"time"
)

// Pet is a pet as the API returns it (schema Pet).
type Pet struct {
	ID         int64       `json:"id"`
	Name       string      `json:"name"`
	Species    string      `json:"species"`
	Status     string      `json:"status"`
	Tags       []string    `json:"tags"`
	CategoryID int64       `json:"categoryId,omitempty"`
	Details    *PetDetails `json:"details,omitempty"`
	HasPhoto   bool        `json:"hasPhoto"`
	Version    int64       `json:"version"`
	CreatedAt  time.Time   `json:"createdAt"`
	UpdatedAt  time.Time   `json:"updatedAt"`
}

// PetDetails is the species-specific part of a pet: schema PetDetails, a
// oneOf of DogDetails and CatDetails discriminated by Kind.
type PetDetails struct {
	Kind      string `json:"kind"`
	Breed     string `json:"breed,omitempty"`
	GoodBoy   *bool  `json:"goodBoy,omitempty"`
	Indoor    *bool  `json:"indoor,omitempty"`
	LivesLeft *int   `json:"livesLeft,omitempty"`
}

// PetInput is the body of createPet and replacePet (schema PetInput).
type PetInput struct {
	Name       string      `json:"name"`
	Species    string      `json:"species"`
	Status     string      `json:"status,omitempty"`
	Tags       []string    `json:"tags,omitempty"`
	CategoryID int64       `json:"categoryId,omitempty"`
	Details    *PetDetails `json:"details,omitempty"`
}

// PetPatch is the body of updatePet (schema PetPatch): absent fields are
// left unchanged.
type PetPatch struct {
	Name       *string     `json:"name,omitempty"`
	Status     *string     `json:"status,omitempty"`
	Tags       *[]string   `json:"tags,omitempty"`
	CategoryID *int64      `json:"categoryId,omitempty"`
	Details    *PetDetails `json:"details,omitempty"`
}

// PetPage is one page of listPets (schema PetPage).
type PetPage struct {
	Items      []Pet  `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// PhotoInfo describes a stored pet photo (schema PhotoInfo).
type PhotoInfo struct {
	PetID       int64  `json:"petId"`
	Size        int    `json:"size"`
	ContentType string `json:"contentType"`
	Caption     string `json:"caption,omitempty"`
}

// Category is a node of the category tree (schema Category, recursive).
type Category struct {
	ID       int64      `json:"id"`
	Name     string     `json:"name"`
	Children []Category `json:"children"`
}

// Order is an adoption order (schema Order).
type Order struct {
	ID        int64     `json:"id"`
	PetID     int64     `json:"petId"`
	Status    string    `json:"status"`
	Note      string    `json:"note,omitempty"`
	Express   bool      `json:"express"`
	CreatedAt time.Time `json:"createdAt"`
}

// User is the caller as the API sees it (schema User).
type User struct {
	Subject       string          `json:"subject"`
	Authenticated bool            `json:"authenticated"`
	Preferences   UserPreferences `json:"preferences"`
}

// UserPreferences are read from the theme cookie.
type UserPreferences struct {
	Theme string `json:"theme,omitempty"`
}

// Report is a long-running report job (schema Report).
type Report struct {
	ID        int64         `json:"id"`
	Kind      string        `json:"kind"`
	Status    string        `json:"status"`
	CreatedAt time.Time     `json:"createdAt"`
	Result    *ReportResult `json:"result,omitempty"`
}

// ReportResult is the outcome of a finished report.
type ReportResult struct {
	Total    int            `json:"total"`
	ByStatus map[string]int `json:"byStatus"`
}

// report is a stored job: its public view and the result revealed when done.
type report struct {
	Report
	doneAt time.Time
	result ReportResult
}

// Enumerations shared by validation and the document.
var (
	errValidation = errors.New("validation failed")
)

func validSpecies(s string) bool   { return s == "dog" || s == "cat" || s == "bird" || s == "fish" }
func validPetStatus(s string) bool { return s == "available" || s == "pending" || s == "adopted" }

// petRecord is an immutable stored pet: the pet, its encodings and photo.
type petRecord struct {
	pet     Pet
	enc     []byte   // JSON of pet
	etag    []string // {`"v<version>"`}
	clen    []string // {len(enc)}
	photo   []byte
	caption string
}

// newRecord builds an immutable record for p.
func newRecord(p Pet, photo []byte, caption string) *petRecord {
	if p.Tags == nil {
		p.Tags = []string{}
	}
	p.HasPhoto = photo != nil
	enc, err := json.Marshal(p)
	if err != nil { // cannot happen: Pet has only encodable fields
		panic(fmt.Errorf("demo: encode pet: %w", err))
	}
	return &petRecord{
		pet:     p,
		enc:     enc,
		etag:    []string{`"v` + strconv.FormatInt(p.Version, 10) + `"`},
		clen:    []string{strconv.Itoa(len(enc))},
		photo:   photo,
		caption: caption,
	}
}

// validateInput checks a PetInput against the document's constraints and
// the category tree; the error text is the problem detail of a 422.
func (a *API) validateInput(in *PetInput) error {
	if err := validName(in.Name); err != nil {
		return err
	}
	if !validSpecies(in.Species) {
		return fmt.Errorf("%w: species must be one of dog, cat, bird, fish (got %q)", errValidation, in.Species)
	}
	if in.Status != "" && !validPetStatus(in.Status) {
		return fmt.Errorf("%w: status must be one of available, pending, adopted (got %q)", errValidation, in.Status)
	}
	if err := validTags(in.Tags); err != nil {
		return err
	}
	if in.CategoryID != 0 && !a.categoryExists(in.CategoryID) {
		return fmt.Errorf("%w: no category with id %d", errValidation, in.CategoryID)
	}
	if in.Details != nil {
		return in.Details.validate(in.Species)
	}
	return nil
}

func validName(n string) error {
	if n == "" || len([]rune(n)) > 64 {
		return fmt.Errorf("%w: name must be 1 to 64 characters", errValidation)
	}
	return nil
}

func validTags(tags []string) error {
	if len(tags) > 10 {
		return fmt.Errorf("%w: at most 10 tags", errValidation)
	}
	for _, t := range tags {
		if t == "" || len(t) > 32 {
			return fmt.Errorf("%w: tag %q must be 1 to 32 characters", errValidation, t)
		}
		for _, c := range t {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("%w: tag %q may only contain a-z, 0-9 and -", errValidation, t)
			}
		}
	}
	return nil
}

// validate checks the oneOf: the fields must belong to the kind, and the
// kind must match the pet's species.
func (d *PetDetails) validate(species string) error {
	switch d.Kind {
	case "dog":
		if d.Indoor != nil || d.LivesLeft != nil {
			return fmt.Errorf("%w: details of kind dog take only breed and goodBoy", errValidation)
		}
		if len(d.Breed) > 64 {
			return fmt.Errorf("%w: breed must be at most 64 characters", errValidation)
		}
	case "cat":
		if d.Breed != "" || d.GoodBoy != nil {
			return fmt.Errorf("%w: details of kind cat take only indoor and livesLeft", errValidation)
		}
		if d.LivesLeft != nil && (*d.LivesLeft < 0 || *d.LivesLeft > 9) {
			return fmt.Errorf("%w: livesLeft must be between 0 and 9", errValidation)
		}
	default:
		return fmt.Errorf("%w: details.kind must be dog or cat (got %q)", errValidation, d.Kind)
	}
	if d.Kind != species {
		return fmt.Errorf("%w: details.kind %q does not match species %q", errValidation, d.Kind, species)
	}
	return nil
}

func (a *API) categoryExists(id int64) bool {
	var walk func([]Category) bool
	walk = func(cs []Category) bool {
		for _, c := range cs {
			if c.ID == id || walk(c.Children) {
				return true
			}
		}
		return false
	}
	return walk(a.categories)
}

// nameTakenLocked reports whether another pet already has this name
// (case-insensitively). Caller holds a.mu.
func (a *API) nameTakenLocked(name string, except int64) bool {
	for id, r := range a.pets {
		if id != except && bytes.EqualFold([]byte(r.pet.Name), []byte(name)) {
			return true
		}
	}
	return false
}

// sortedPetIDsLocked returns the pet ids in ascending order. Caller holds a.mu.
func (a *API) sortedPetIDsLocked() []int64 {
	ids := make([]int64, 0, len(a.pets))
	for id := range a.pets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// seed fills a new API with the sample data.
func (a *API) seed() {
	a.categories = []Category{
		{ID: 1, Name: "Mammals", Children: []Category{
			{ID: 2, Name: "Dogs", Children: []Category{}},
			{ID: 3, Name: "Cats", Children: []Category{}},
		}},
		{ID: 4, Name: "Birds", Children: []Category{
			{ID: 5, Name: "Parrots", Children: []Category{}},
		}},
		{ID: 6, Name: "Fish", Children: []Category{}},
	}
	names := []string{
		"Rex", "Whiskers", "Polly", "Nemo", "Fido", "Felix", "Kiwi", "Dory",
		"Buddy", "Luna", "Sunny", "Bubbles", "Max", "Misty", "Rio", "Goldie",
		"Rocky", "Shadow", "Mango", "Finn", "Duke", "Cleo", "Pip", "Splash",
	}
	species := []string{"dog", "cat", "bird", "fish"}
	category := map[string]int64{"dog": 2, "cat": 3, "bird": 5, "fish": 6}
	tagSets := [][]string{{"friendly"}, {"friendly", "trained"}, {"young"}, {}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	yes, no, lives := true, false, 9
	for i, n := range names {
		id := int64(i + 1)
		sp := species[i%len(species)]
		p := Pet{
			ID: id, Name: n, Species: sp, Status: "available",
			Tags: slices.Clone(tagSets[(i/4)%len(tagSets)]), CategoryID: category[sp],
			Version: 1, CreatedAt: t0.Add(time.Duration(i) * time.Hour),
		}
		p.UpdatedAt = p.CreatedAt
		switch sp {
		case "dog":
			p.Details = &PetDetails{Kind: "dog", Breed: "mixed", GoodBoy: &yes}
		case "cat":
			p.Details = &PetDetails{Kind: "cat", Indoor: &no, LivesLeft: &lives}
		}
		if i%6 == 5 {
			p.Status = "adopted"
		}
		var photo []byte
		if id == 1 {
			photo = samplePNG()
		}
		a.pets[id] = newRecord(p, photo, "")
	}
	a.nextPet = int64(len(names))
}

// samplePNG returns a small valid PNG image.
func samplePNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for x := range 4 {
		for y := range 4 {
			img.Set(x, y, color.RGBA{R: uint8(60 * x), G: uint8(60 * y), B: 200, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil { // cannot fail on a bytes.Buffer
		panic(fmt.Errorf("demo: encode sample png: %w", err))
	}
	return b.Bytes()
}

// pngMagic is the 8-byte PNG signature.
func isPNG(b []byte) bool {
	return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))
}
