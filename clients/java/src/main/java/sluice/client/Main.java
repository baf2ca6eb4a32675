package sluice.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import sluice.CancelJob;
import sluice.JobRejected;
import sluice.JobSpec;
import sluice.JobStartNotification;
import sluice.RequestDenied;
import sluice.SubmitJob;

/**
 * Submits a job, submits a held job and cancels it, then follows the job-start notifications
 * and prints the one of the first job; a refusal of either job in the ledger (JobRejected,
 * RequestDenied), or a dead letter of either request the views found by its SLUID (GET
 * /v1/decisions: the intake could not read it, so no fact will come), ends it with the reason.
 * Settings come from the environment, as for the sluice CLI: KAFKA_BOOTSTRAP,
 * SLUICE_TOPIC_PREFIX, SLUICE_CLUSTER_ID, SLUICE_JWT (from `sluice token`), SLUICE_API.
 *
 * <p>Usage: java -jar target/sluice-client.jar [--workdir DIR] [--timeout SECONDS]
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    int status;
    try {
      status = run(args);
    } catch (Exception e) { // a broker that does not answer, a bad setting: one line, exit 1
      System.err.println("sluice-client: " + e);
      status = 1;
    }
    System.exit(status);
  }

  private static int run(String[] args) throws Exception {
    String workdir = Path.of("").toAbsolutePath().toString();
    int timeoutS = 120;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--workdir" -> workdir = Path.of(value(args, ++i)).toAbsolutePath().toString();
        case "--timeout" -> timeoutS = seconds(value(args, ++i));
        default -> usage("unknown argument " + args[i]);
      }
    }
    Map<String, String> env = System.getenv();
    String bootstrap = env.getOrDefault("KAFKA_BOOTSTRAP", "127.0.0.1:9092");
    String prefix = env.getOrDefault("SLUICE_TOPIC_PREFIX", "sluice");
    String token = env.getOrDefault("SLUICE_JWT", "");
    Sluid.Generator sluids;
    try {
      sluids = new Sluid.Generator(Integer.parseInt(env.getOrDefault("SLUICE_CLUSTER_ID", "2")));
    } catch (IllegalArgumentException e) { // NumberFormatException too
      System.err.println("sluice-client: SLUICE_CLUSTER_ID: " + e.getMessage());
      return 1;
    }

    // Every field left out of a builder gets the schema's default (ntasks=1, cpus_per_task=1 ...).
    String job = sluids.next();
    // A nonce per submission (kept if it is sent again) tells a redelivery from another
    // client's job that drew the same SLUID (docs/wire-format.md).
    SubmitJob submit = SubmitJob.newBuilder()
        .setJobSluid(job)
        .setSpec(JobSpec.newBuilder()
            .setUser("") // the credential names the user
            .setName("java-client")
            .setCommand(List.of("/bin/sh", "-c", "echo hello from java"))
            .setWorkdir(workdir)
            .build())
        .setNonce(nonce())
        .build();
    String held = sluids.next();
    SubmitJob heldSubmit = SubmitJob.newBuilder()
        .setJobSluid(held)
        .setSpec(JobSpec.newBuilder().setUser("").setName("java-client-cancelled")
            .setCommand(List.of("sleep", "600")).setWorkdir(workdir).setHold(true).build())
        .setNonce(nonce())
        .build();
    CancelJob cancel = CancelJob.newBuilder().setJobSluid(held).build();

    String requests = prefix + ".requests";
    // Where the job-start and ledger topics end now: the notification of our job, or its
    // refusal, can only come later.
    try (KafkaConsumer<String, byte[]> consumer =
            consumer(bootstrap, prefix + ".job-starts", prefix + ".events");
        KafkaProducer<String, byte[]> producer = producer(bootstrap)) {
      // The key is the job SLUID; kafka-clients' default partitioner hashes it with murmur2.
      send(producer, requests, job, submit.toByteBuffer(), token, sluids);
      System.out.println("submitted " + job);
      send(producer, requests, held, heldSubmit.toByteBuffer(), token, sluids);
      send(producer, requests, held, cancel.toByteBuffer(), token, sluids);
      System.out.println("cancel requested " + held);
      // The views answer at once when the intake dead-lettered either request; the ledger has
      // the rest. The first refusal ends the wait.
      AtomicReference<String> letter = new AtomicReference<>();
      Thread watcher = new Thread(() -> watchDeadLetters(env, token, letter, job, held));
      watcher.setDaemon(true);
      watcher.start();
      return follow(consumer, job, held, timeoutS, letter) ? 0 : 1;
    }
  }

  private static KafkaProducer<String, byte[]> producer(String bootstrap) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    return new KafkaProducer<>(props);
  }

  private static void send(KafkaProducer<String, byte[]> producer, String topic, String key,
      ByteBuffer single, String token, Sluid.Generator sluids) throws Exception {
    byte[] value = new byte[single.remaining()];
    single.get(value); // C3 01, the CRC-64-AVRO fingerprint, the Avro body
    ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic, key, value);
    record.headers().add("sluice-request-id", sluids.next().getBytes(StandardCharsets.UTF_8));
    if (!token.isEmpty()) {
      record.headers().add("sluice-auth", ("jwt " + token).getBytes(StandardCharsets.UTF_8));
    }
    producer.send(record).get();
  }

  /** A consumer of every partition of the topics, positioned at their current end. */
  private static KafkaConsumer<String, byte[]> consumer(String bootstrap, String... topics) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"); // written in transactions
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props);
    List<TopicPartition> partitions = new ArrayList<>();
    for (String topic : topics) {
      for (PartitionInfo info : consumer.partitionsFor(topic)) {
        partitions.add(new TopicPartition(topic, info.partition()));
      }
    }
    consumer.assign(partitions);
    consumer.seekToEnd(partitions);
    partitions.forEach(consumer::position); // resolve the end offsets now, before submitting
    return consumer;
  }

  /**
   * Reads job-start notifications until the one of {@code job}, and the ledger for a refusal of
   * {@code job} or {@code held} (the ledger is keyed by the subject's SLUID).
   */
  private static boolean follow(KafkaConsumer<String, byte[]> consumer, String job, String held,
      int timeoutS, AtomicReference<String> letter) {
    long deadline = System.nanoTime() + timeoutS * 1_000_000_000L;
    while (System.nanoTime() < deadline) {
      if (letter.get() != null) {
        System.err.println("sluice-client: " + letter.get());
        return false;
      }
      for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(500))) {
        if (!record.topic().endsWith(".job-starts")) {
          if ((job.equals(record.key()) || held.equals(record.key())) && refused(record.value())) {
            return false;
          }
          continue;
        }
        JobStartNotification started;
        try {
          started = JobStartNotification.fromByteBuffer(ByteBuffer.wrap(record.value()));
        } catch (Exception e) { // another release's fingerprint, or not ours
          System.err.println("skipped an unreadable record at offset " + record.offset() + ": " + e);
          continue;
        }
        if (job.equals(started.getJobSluid())) {
          System.out.println("job-start job_sluid=" + started.getJobSluid()
              + " job_id=" + started.getJobId() + " user=" + started.getUser()
              + " nodes=" + String.join(",", started.getNodes()));
          return true;
        }
      }
    }
    System.err.println("no job-start notification for " + job + " within " + timeoutS + " s");
    return false;
  }

  /**
   * Long-polls GET /v1/decisions (the views, SLUICE_API) for the SLUIDs, without a nonce, until
   * each is decided; a dead_letter answer (the intake could not read the request: it never
   * reached the ledger) is put in {@code letter}. The views not answering only says so: the
   * ledger is still read.
   */
  private static void watchDeadLetters(Map<String, String> env, String token,
      AtomicReference<String> letter, String... sluids) {
    String api = env.getOrDefault("SLUICE_API", "127.0.0.1:6817");
    if (!api.contains("://")) api = "http://" + api;
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    ObjectMapper json = new ObjectMapper();
    Set<String> pending = new LinkedHashSet<>(List.of(sluids));
    while (!pending.isEmpty()) {
      String ids = URLEncoder.encode(String.join(",", pending), StandardCharsets.UTF_8);
      HttpRequest.Builder request = HttpRequest.newBuilder(
          URI.create(api + "/v1/decisions?ids=" + ids + "&wait=30"))
          .timeout(Duration.ofSeconds(60));
      if (!token.isEmpty()) request.header("Authorization", "Bearer " + token);
      JsonNode decisions;
      try {
        HttpResponse<String> response =
            http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) throw new Exception("HTTP " + response.statusCode());
        decisions = json.readTree(response.body()).path("decisions");
      } catch (Exception e) {
        System.err.println("sluice-client: the views at " + api + " did not answer (" + e
            + "): dead-lettered requests are not seen");
        return;
      }
      for (String sluid : sluids) {
        JsonNode decision = decisions.path(sluid);
        if (decision.isMissingNode() || decision.isNull()) continue; // not decided yet
        pending.remove(sluid);
        JsonNode dead = decision.path("dead_letter");
        if (dead.isObject()) {
          String why = dead.path("detail").asText("");
          if (why.isEmpty()) why = dead.path("meaning").asText("");
          letter.set("refused " + sluid + " DeadLetter " + dead.path("reason").asText("")
              + ": " + why + " (dead-lettered by the intake)");
          return;
        }
      }
    }
  }

  /** Whether {@code value} is a refusal (other facts have other fingerprints); prints it. */
  private static boolean refused(byte[] value) {
    try {
      JobRejected rejected = JobRejected.fromByteBuffer(ByteBuffer.wrap(value));
      System.err.println("sluice-client: refused " + rejected.getJobSluid() + " JobRejected "
          + rejected.getReason() + ": " + rejected.getDetail());
      return true;
    } catch (Exception e) {
      // not a JobRejected
    }
    try {
      RequestDenied denied = RequestDenied.fromByteBuffer(ByteBuffer.wrap(value));
      System.err.println("sluice-client: refused " + denied.getSubjectSluid() + " RequestDenied "
          + denied.getReason() + ": " + denied.getDetail() + " (a " + denied.getRequest() + ")");
      return true;
    } catch (Exception e) {
      return false; // JobQueued, JobStarted ... of our jobs
    }
  }

  private static int seconds(String text) {
    try {
      int value = Integer.parseInt(text);
      if (value > 0) return value;
    } catch (NumberFormatException e) {
      // below
    }
    usage("--timeout needs a positive number of seconds, not " + text);
    return 0;
  }

  private static String value(String[] args, int i) {
    if (i >= args.length) usage(args[i - 1] + " needs a value");
    return args[i];
  }

  private static void usage(String problem) {
    System.err.println("sluice-client: " + problem
        + "\nusage: java -jar sluice-client.jar [--workdir DIR] [--timeout SECONDS]");
    System.exit(2);
  }

  private static final SecureRandom RANDOM = new SecureRandom();

  /** A submission's nonce: 63 random bits, never 0 (0 says "none"). */
  static long nonce() {
    long n = RANDOM.nextLong() >>> 1;
    return n == 0 ? 1 : n;
  }
}
