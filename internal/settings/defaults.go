package settings

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// ApplyDefaults sets every zero-valued setting of the struct ptr points to
// from its `default` tag, sections included: the same defaults kong applies
// on the command line, for programs that build the struct themselves.
func ApplyDefaults(ptr any) error {
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("settings: ApplyDefaults needs a pointer to a struct, not %T", ptr)
	}
	return applyDefaults(v.Elem())
}

func applyDefaults(v reflect.Value) error {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if !f.IsExported() && !f.Anonymous || f.Tag.Get("kong") == "-" {
			continue
		}
		if _, ok := f.Tag.Lookup("embed"); ok && fv.Kind() == reflect.Struct {
			if err := applyDefaults(fv); err != nil {
				return err
			}
			continue
		}
		def, ok := f.Tag.Lookup("default")
		if !ok || !fv.IsZero() || !fv.CanSet() {
			continue
		}
		if err := setText(fv, def); err != nil {
			return fmt.Errorf("settings: default of %s: %w", f.Name, err)
		}
	}
	return nil
}

// setText parses s into v (string, bool, integer, duration or a list of
// strings, comma-separated).
func setText(v reflect.Value, s string) error {
	if v.Type() == reflect.TypeFor[time.Duration]() {
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		v.SetInt(n)
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		v.SetFloat(n)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("cannot default a %s", v.Type())
		}
		parts := strings.Split(s, ",")
		v.Set(reflect.ValueOf(parts).Convert(v.Type()))
	default:
		return fmt.Errorf("cannot default a %s", v.Type())
	}
	return nil
}
