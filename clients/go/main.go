// Command sluice-client submits a job, submits a held job and cancels it, then follows the
// job-start notifications and prints the one of the first job; a refusal of either job in the
// ledger (JobRejected, RequestDenied), or a dead letter of either request the views found by its
// SLUID (GET /v1/decisions: the intake could not read it, so no fact will come), ends it with
// the reason. Settings come from the environment, as for the sluice CLI: KAFKA_BOOTSTRAP,
// SLUICE_TOPIC_PREFIX, SLUICE_CLUSTER_ID, SLUICE_JWT (from `sluice token`), SLUICE_API.
//
// Build: go generate ./... && go build -o sluice-client .
// Usage: ./sluice-client [-workdir DIR] [-timeout SECONDS]
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2/soe"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"sluice.dev/clients/go/records"
	"sluice.dev/clients/go/sluid"
)

func main() {
	cwd, _ := os.Getwd()
	workdir := flag.String("workdir", cwd, "the job's working directory (absolute)")
	timeout := flag.Int("timeout", 120, "seconds to wait for the job-start notification")
	flag.Parse()
	if flag.NArg() > 0 || *timeout <= 0 {
		fmt.Fprintln(os.Stderr, "sluice-client: usage: sluice-client [-workdir DIR] [-timeout SECONDS > 0]")
		os.Exit(2)
	}
	if err := run(*workdir, time.Duration(*timeout)*time.Second); err != nil {
		fmt.Fprintf(os.Stderr, "sluice-client: %v\n", err)
		os.Exit(1)
	}
}

func env(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func run(workdir string, timeout time.Duration) error {
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return err
	}
	prefix := env("SLUICE_TOPIC_PREFIX", "sluice")
	clusterID, err := strconv.Atoi(env("SLUICE_CLUSTER_ID", "2"))
	if err != nil {
		return fmt.Errorf("SLUICE_CLUSTER_ID: %w", err)
	}
	ids, err := sluid.NewGenerator(clusterID)
	if err != nil {
		return err
	}
	seeds := kgo.SeedBrokers(strings.Split(env("KAFKA_BOOTSTRAP", "127.0.0.1:9092"), ",")...)
	// franz-go's defaults are what Sluice needs: keyed records go where Java's murmur2
	// partitioner puts them, and batches are snappy-compressed (the intake reads every codec).
	client, err := kgo.NewClient(seeds)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Where the job-start and ledger topics end now: the notification of our job, or its
	// refusal, can only come later.
	starts, err := atEnd(ctx, client, seeds, prefix+".job-starts", prefix+".events")
	if err != nil {
		return err
	}
	defer starts.Close()

	job, held := ids.Next(), ids.Next()
	submit, err := submitJob(job, workdir, "go-client", []string{"/bin/sh", "-c", "echo hello from go"}, false)
	if err != nil {
		return err
	}
	heldSubmit, err := submitJob(held, workdir, "go-client-cancelled", []string{"sleep", "600"}, true)
	if err != nil {
		return err
	}
	requests := prefix + ".requests"
	if err := send(ctx, client, ids, requests, job, submit); err != nil {
		return err
	}
	fmt.Println("submitted", job)
	if err := send(ctx, client, ids, requests, held, heldSubmit); err != nil {
		return err
	}
	if err := send(ctx, client, ids, requests, held, &records.CancelJob{JobSluid: held}); err != nil {
		return err
	}
	fmt.Println("cancel requested", held)
	// The views answer at once when the intake dead-lettered either request; the ledger has
	// the rest. The first refusal ends the wait.
	watching, stop := context.WithCancel(ctx)
	defer stop()
	letters := make(chan error, 1)
	go watchDeadLetters(watching, stop, letters, job, held)
	err = follow(watching, starts, job, held)
	select {
	case letter := <-letters:
		return letter
	default:
		return err
	}
}

// watchDeadLetters long-polls GET /v1/decisions (the views, SLUICE_API) for job and held,
// without a nonce, until each is decided: a dead_letter answer (the intake could not read the
// request: it never reached the ledger) is sent on letters and ends the wait (stop). The views
// not answering only says so: the ledger is still read.
func watchDeadLetters(ctx context.Context, stop context.CancelFunc, letters chan<- error, sluids ...string) {
	api := env("SLUICE_API", "127.0.0.1:6817")
	if !strings.Contains(api, "://") {
		api = "http://" + api
	}
	pending := map[string]bool{}
	for _, sluid := range sluids {
		pending[sluid] = true
	}
	for len(pending) > 0 && ctx.Err() == nil {
		ids := make([]string, 0, len(pending))
		for sluid := range pending {
			ids = append(ids, sluid)
		}
		query := url.Values{"ids": {strings.Join(ids, ",")}, "wait": {"30"}}
		request, err := http.NewRequestWithContext(ctx, http.MethodGet,
			api+"/v1/decisions?"+query.Encode(), nil)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sluice-client: SLUICE_API: %v (dead letters not watched)\n", err)
			return
		}
		if token := os.Getenv("SLUICE_JWT"); token != "" {
			request.Header.Set("Authorization", "Bearer "+token)
		}
		var answer struct {
			Decisions map[string]*struct {
				DeadLetter *struct {
					Reason  string `json:"reason"`
					Meaning string `json:"meaning"`
					Detail  string `json:"detail"`
				} `json:"dead_letter"`
			} `json:"decisions"`
		}
		response, err := http.DefaultClient.Do(request)
		if err == nil {
			if response.StatusCode != http.StatusOK {
				err = fmt.Errorf("HTTP %s", response.Status)
			} else {
				err = json.NewDecoder(response.Body).Decode(&answer)
			}
			response.Body.Close()
		}
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "sluice-client: the views at %s did not answer (%v): "+
					"dead-lettered requests are not seen\n", api, err)
			}
			return
		}
		for _, sluid := range sluids {
			decision := answer.Decisions[sluid]
			if decision == nil {
				continue // not decided yet
			}
			delete(pending, sluid)
			if letter := decision.DeadLetter; letter != nil {
				why := letter.Detail
				if why == "" {
					why = letter.Meaning
				}
				letters <- fmt.Errorf("refused %s DeadLetter %s: %s (dead-lettered by the intake)",
					sluid, letter.Reason, why)
				stop()
				return
			}
		}
	}
}

// atEnd is a consumer of every partition of the topics from their current end offsets.
func atEnd(ctx context.Context, client *kgo.Client, seeds kgo.Opt, topics ...string) (*kgo.Client, error) {
	ends, err := kadm.NewClient(client).ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	offsets := map[string]map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if offsets[o.Topic] == nil {
			offsets[o.Topic] = map[int32]kgo.Offset{}
		}
		offsets[o.Topic][o.Partition] = kgo.NewOffset().At(o.Offset)
	})
	return kgo.NewClient(seeds, kgo.FetchIsolationLevel(kgo.ReadCommitted()), // transactions
		kgo.ConsumePartitions(offsets))
}

func submitJob(job, workdir, name string, command []string, hold bool) (*records.SubmitJob, error) {
	spec := records.JobSpec{}
	if err := records.FillDefaults(&spec); err != nil { // nodes_min=1, ntasks=1, cpus_per_task=1 ...
		return nil, err
	}
	spec.User = "" // the credential names the user
	spec.Name, spec.Command, spec.Workdir, spec.Hold = name, command, workdir, hold
	nonce, err := newNonce()
	if err != nil {
		return nil, err
	}
	return &records.SubmitJob{JobSluid: job, Spec: spec, Nonce: nonce}, nil
}

// newNonce draws a submission's nonce: 63 random bits, never 0 (0 says "none"). Kept when the
// same submission is sent again, it tells a redelivery from another client's job that drew the
// same SLUID (docs/wire-format.md).
func newNonce() (int64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	if n := int64(binary.BigEndian.Uint64(b[:]) >> 1); n != 0 {
		return n, nil
	}
	return 1, nil
}

// send writes one request: key = the subject SLUID, value = single-object encoding
// (C3 01, the CRC-64-AVRO fingerprint little-endian, the Avro body), the auth headers.
func send(ctx context.Context, client *kgo.Client, ids *sluid.Generator, topic, key string,
	record soe.AvroGenerated) error {
	codec, err := soe.NewCodec(record.Schema())
	if err != nil {
		return err
	}
	value, err := codec.Encode(record)
	if err != nil {
		return err
	}
	headers := []kgo.RecordHeader{{Key: "sluice-request-id", Value: []byte(ids.Next())}}
	if token := os.Getenv("SLUICE_JWT"); token != "" {
		headers = append(headers, kgo.RecordHeader{Key: "sluice-auth", Value: []byte("jwt " + token)})
	}
	return client.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: value,
		Headers: headers}).FirstErr()
}

// follow reads job-start notifications until the one of job, and the ledger for a refusal of
// job or held (the ledger is keyed by the subject's SLUID: other keys are not decoded).
func follow(ctx context.Context, client *kgo.Client, job, held string) error {
	var started records.JobStartNotification
	var rejected records.JobRejected
	var denied records.RequestDenied
	codec, err := soe.NewCodec(started.Schema())
	if err != nil {
		return err
	}
	rejections, err := soe.NewCodec(rejected.Schema())
	if err != nil {
		return err
	}
	denials, err := soe.NewCodec(denied.Schema())
	if err != nil {
		return err
	}
	for {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("no job-start notification for %s: %w", job, ctx.Err())
		}
		for _, fetchErr := range fetches.Errors() {
			if !errors.Is(fetchErr.Err, context.DeadlineExceeded) {
				fmt.Fprintf(os.Stderr, "fetch %s[%d]: %v\n", fetchErr.Topic, fetchErr.Partition, fetchErr.Err)
			}
		}
		for _, record := range fetches.Records() {
			if !strings.HasSuffix(record.Topic, ".job-starts") {
				if key := string(record.Key); key != job && key != held {
					continue
				}
				// other facts of our jobs (JobQueued, JobStarted ...) have other fingerprints
				if rejections.Decode(record.Value, &rejected) == nil {
					return fmt.Errorf("refused %s JobRejected %s: %s", rejected.JobSluid,
						rejected.Reason, rejected.Detail)
				}
				if denials.Decode(record.Value, &denied) == nil {
					return fmt.Errorf("refused %s RequestDenied %s: %s (a %s)", denied.SubjectSluid,
						denied.Reason, denied.Detail, denied.Request)
				}
				continue
			}
			var notification records.JobStartNotification
			if err := codec.Decode(record.Value, &notification); err != nil {
				fmt.Fprintf(os.Stderr, "skipped an unreadable record at offset %d: %v\n", record.Offset, err)
				continue
			}
			if notification.JobSluid == job {
				fmt.Printf("job-start job_sluid=%s job_id=%d user=%s nodes=%s\n", notification.JobSluid,
					notification.JobID, notification.User, strings.Join(notification.Nodes, ","))
				return nil
			}
		}
	}
}
