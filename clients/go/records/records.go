// Package records holds the Sluice record types, generated from ../../../schemas/*.avsc by
// hamba/avro's avrogen (run `go generate ./...`; records_gen.go is not committed), and
// FillDefaults, which sets the defaults avrogen's structs do not carry.
package records

//go:generate go tool avrogen -pkg records -o records_gen.go -encoders -fullschema ../../../schemas/Segment.avsc ../../../schemas/JobSpec.avsc ../../../schemas/SubmitJob.avsc ../../../schemas/CancelJob.avsc ../../../schemas/JobStartNotification.avsc ../../../schemas/JobRejected.avsc ../../../schemas/RequestDenied.avsc

import (
	"fmt"
	"reflect"

	"github.com/hamba/avro/v2"
)

// Generated is what avrogen's -encoders structs have.
type Generated interface {
	Schema() avro.Schema
}

// FillDefaults sets every field of record (a pointer to a generated struct) that has a default
// in the schema to that default. A Go zero value is not the schema's default: without this a
// JobSpec would ask for ntasks=0 and cpus_per_task=0, which the scheduler refuses.
func FillDefaults(record Generated) error {
	schema, ok := record.Schema().(*avro.RecordSchema)
	if !ok {
		return fmt.Errorf("%T: not a record schema", record)
	}
	value := reflect.ValueOf(record).Elem()
	byTag := map[string]reflect.Value{}
	for i := 0; i < value.NumField(); i++ {
		byTag[value.Type().Field(i).Tag.Get("avro")] = value.Field(i)
	}
	for _, field := range schema.Fields() {
		if !field.HasDefault() {
			continue
		}
		target, found := byTag[field.Name()]
		if !found {
			return fmt.Errorf("%s: no struct field tagged %q", schema.FullName(), field.Name())
		}
		if err := set(target, field.Default()); err != nil {
			return fmt.Errorf("%s.%s: %w", schema.FullName(), field.Name(), err)
		}
	}
	return nil
}

func set(target reflect.Value, def any) error {
	switch target.Kind() {
	case reflect.Slice:
		items, _ := def.([]any)
		out := reflect.MakeSlice(target.Type(), 0, len(items))
		for _, item := range items {
			out = reflect.Append(out, reflect.ValueOf(item).Convert(target.Type().Elem()))
		}
		target.Set(out)
	case reflect.Map:
		entries, _ := def.(map[string]any)
		out := reflect.MakeMapWithSize(target.Type(), len(entries))
		for k, v := range entries {
			out.SetMapIndex(reflect.ValueOf(k), reflect.ValueOf(v).Convert(target.Type().Elem()))
		}
		target.Set(out)
	default:
		if def == nil {
			return nil
		}
		given := reflect.ValueOf(def)
		if !given.CanConvert(target.Type()) {
			return fmt.Errorf("default %v (%T) does not fit %s", def, def, target.Type())
		}
		target.Set(given.Convert(target.Type()))
	}
	return nil
}
