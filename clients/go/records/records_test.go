package records

import (
	"reflect"
	"testing"

	"github.com/hamba/avro/v2"
)

func TestFillDefaultsGivesTheSchemaDefaultsNotZeroCounts(t *testing.T) {
	spec := JobSpec{}
	if err := FillDefaults(&spec); err != nil {
		t.Fatal(err)
	}
	if spec.NodesMin != 1 || spec.Ntasks != 1 || spec.CpusPerTask != 1 {
		t.Fatalf("nodes_min=%d ntasks=%d cpus_per_task=%d, want 1 1 1",
			spec.NodesMin, spec.Ntasks, spec.CpusPerTask)
	}
	if spec.Command == nil || spec.Env == nil {
		t.Fatal("the empty array and map defaults were not set")
	}
}

func TestEveryDefaultOfTheSchemaIsInTheStruct(t *testing.T) {
	spec := JobSpec{}
	if err := FillDefaults(&spec); err != nil {
		t.Fatal(err)
	}
	value := reflect.ValueOf(spec)
	for _, field := range spec.Schema().(*avro.RecordSchema).Fields() {
		if !field.HasDefault() {
			continue
		}
		for i := 0; i < value.NumField(); i++ {
			if value.Type().Field(i).Tag.Get("avro") != field.Name() {
				continue
			}
			got := value.Field(i).Interface()
			switch want := field.Default().(type) {
			case []any, map[string]any:
				if value.Field(i).Len() != reflect.ValueOf(want).Len() {
					t.Errorf("%s: %v, want %v", field.Name(), got, want)
				}
			default:
				if reflect.ValueOf(want).Convert(value.Field(i).Type()).Interface() != got {
					t.Errorf("%s: %v, want %v", field.Name(), got, want)
				}
			}
		}
	}
}
