package sluid

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

type vectors struct {
	Compose []struct {
		ClusterID int    `json:"cluster_id"`
		UnixMs    int64  `json:"unix_ms"`
		Sequence  int    `json:"sequence"`
		Value     string `json:"value"`
		Text      string `json:"text"`
	} `json:"compose"`
	Parse []struct {
		Text      string `json:"text"`
		Value     string `json:"value"`
		Canonical string `json:"canonical"`
	} `json:"parse"`
	Invalid []string `json:"invalid"`
	Mint    []struct {
		Clock struct {
			ClusterID int   `json:"cluster_id"`
			LastMs    int64 `json:"last_ms"`
			Sequence  int   `json:"sequence"`
		} `json:"clock"`
		NowMs         int64  `json:"now_ms"`
		FirstSequence int    `json:"first_sequence"`
		Text          string `json:"text"`
		Next          struct {
			LastMs   int64 `json:"last_ms"`
			Sequence int   `json:"sequence"`
		} `json:"next"`
	} `json:"mint"`
}

func load(t *testing.T) vectors {
	data, err := os.ReadFile("../../../schemas/sluid-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Compose) == 0 || len(v.Parse) == 0 || len(v.Invalid) == 0 || len(v.Mint) == 0 {
		t.Fatal("a section of the vectors is empty")
	}
	return v
}

func TestComposeAndFormat(t *testing.T) {
	for _, c := range load(t).Compose {
		value, err := Compose(c.ClusterID, c.UnixMs, c.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		if strconv.FormatUint(value, 10) != c.Value || Format(value) != c.Text {
			t.Errorf("%+v: got %d %s", c, value, Format(value))
		}
	}
}

func TestParse(t *testing.T) {
	v := load(t)
	for _, c := range v.Parse {
		value, err := Parse(c.Text)
		if err != nil || strconv.FormatUint(value, 10) != c.Value || Format(value) != c.Canonical {
			t.Errorf("%+v: got %d %v", c, value, err)
		}
	}
	for _, text := range v.Invalid {
		if _, err := Parse(text); err == nil {
			t.Errorf("%q was accepted", text)
		}
	}
}

func TestMint(t *testing.T) {
	for _, c := range load(t).Mint {
		clock := Clock{c.Clock.ClusterID, c.Clock.LastMs, c.Clock.Sequence}
		value, next, err := Mint(clock, c.NowMs, c.FirstSequence)
		if err != nil {
			t.Fatal(err)
		}
		if Format(value) != c.Text || next.LastMs != c.Next.LastMs || next.Sequence != c.Next.Sequence {
			t.Errorf("%+v: got %s %+v", c, Format(value), next)
		}
	}
}

func TestAGeneratorMintsStrictlyIncreasingIds(t *testing.T) {
	g, err := NewGenerator(2)
	if err != nil {
		t.Fatal(err)
	}
	previous := ""
	for i := 0; i < 3000; i++ {
		next := g.Next()
		if next <= previous {
			t.Fatalf("%s after %s", next, previous)
		}
		previous = next
	}
	if _, err := NewGenerator(1); err == nil {
		t.Fatal("cluster id 1 was accepted")
	}
}
