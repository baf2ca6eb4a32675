package dev.sluice.example;

import io.apicurio.registry.serde.SerdeConfig;
import io.apicurio.registry.serde.avro.AvroKafkaSerializer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.generic.GenericRecordBuilder;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Sends one SubmitJob in the Confluent wire format (00 + 4-byte schema id + Avro body).
 *
 * <p>Arguments: bootstrap, topic, registry base URL (http://host:port), schema file
 * (SubmitJob.avsc, self-contained), job SLUID, working directory, job name[, user]. The schema
 * must have been registered ({@code sluice schemas register}). With {@code SLUICE_JWT} set (the
 * token {@code sluice token} printed), the record carries the credential headers
 * ({@code sluice-auth: jwt <token>}, a fresh {@code sluice-request-id}) and the user defaults to
 * "" (the token names it); without, no credential is sent, which only a system started with
 * {@code --no-auth-required} accepts (else: RequestDenied, Unauthenticated). The schema id is
 * Apicurio's content id, which is what its Confluent-compatible API calls a schema id. Kafka's
 * default partitioner (murmur2) puts the record on the partition its key hashes to.
 */
public final class SubmitWithRegistry {
    private SubmitWithRegistry() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], registry = args[2];
        Schema schema = new Schema.Parser().parse(Files.readString(Path.of(args[3])));
        String sluid = args[4], workdir = args[5], name = args[6];
        String token = System.getenv("SLUICE_JWT");
        boolean signed = token != null && !token.isEmpty();

        String user = args.length > 7 ? args[7] : signed ? "" : System.getProperty("user.name");
        Schema specSchema = schema.getField("spec").schema();
        GenericRecord spec = new GenericRecordBuilder(specSchema)  // defaults for the rest
                .set("name", name)
                .set("user", user)
                .set("command", new GenericData.Array<>(
                        specSchema.getField("command").schema(),
                        List.of("sh", "-c", "echo hello from java")))
                .set("workdir", workdir).build();
        GenericRecord submit = new GenericRecordBuilder(schema)
                .set("job_sluid", sluid).set("spec", spec).build();

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                AvroKafkaSerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(SerdeConfig.REGISTRY_URL, registry + "/apis/registry/v2");
        // the schema `sluice schemas register` published: subject (artifact) sluice.SubmitJob in
        // the default group, the one the Confluent-compatible API sees (RecordNameStrategy)
        props.put(SerdeConfig.EXPLICIT_ARTIFACT_GROUP_ID, "default");
        props.put(SerdeConfig.EXPLICIT_ARTIFACT_ID, schema.getFullName());
        props.put(SerdeConfig.FIND_LATEST_ARTIFACT, "true");
        props.put(SerdeConfig.AUTO_REGISTER_ARTIFACT, "false");
        props.put(SerdeConfig.ENABLE_HEADERS, "false");             // the id goes in the value
        props.put(SerdeConfig.ENABLE_CONFLUENT_ID_HANDLER, "true"); // 4-byte id, not 8
        props.put(SerdeConfig.USE_ID, "contentId");                 // the ccompat API's ids

        try (KafkaProducer<String, Object> producer = new KafkaProducer<>(props)) {
            ProducerRecord<String, Object> record = new ProducerRecord<>(topic, sluid, submit);
            if (signed) {  // docs/wire-format.md §6.4: a bearer token and a unique request id
                record.headers().add("sluice-request-id",
                        UUID.randomUUID().toString().getBytes(StandardCharsets.US_ASCII));
                record.headers().add("sluice-auth",
                        ("jwt " + token).getBytes(StandardCharsets.US_ASCII));
            }
            RecordMetadata sent = producer.send(record).get();
            System.out.println("sent " + sluid + " to " + sent.topic() + "[" + sent.partition()
                    + "]@" + sent.offset());
        }
    }
}
