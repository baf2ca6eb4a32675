package sluice.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import sluice.JobSpec;

/** Checks the SLUID code against the shared vectors, schemas/sluid-vectors.json. */
class SluidTest {
  private static final JsonNode VECTORS = read();

  private static JsonNode read() {
    try {
      return new ObjectMapper().readTree(new File("../../schemas/sluid-vectors.json"));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void composeAndFormatGiveEveryVector() {
    for (JsonNode c : VECTORS.get("compose")) {
      long value = Sluid.compose(c.get("cluster_id").asInt(), c.get("unix_ms").asLong(),
          c.get("sequence").asInt());
      assertEquals(c.get("value").asText(), Long.toUnsignedString(value));
      assertEquals(c.get("text").asText(), Sluid.format(value));
    }
  }

  @Test
  void everyAcceptedSpellingParses() {
    for (JsonNode c : VECTORS.get("parse")) {
      long value = Sluid.parse(c.get("text").asText());
      assertEquals(c.get("value").asText(), Long.toUnsignedString(value));
      assertEquals(c.get("canonical").asText(), Sluid.format(value));
    }
  }

  @Test
  void everyInvalidTextIsRefused() {
    for (JsonNode text : VECTORS.get("invalid")) {
      assertThrows(IllegalArgumentException.class, () -> Sluid.parse(text.asText()), text.asText());
    }
  }

  @Test
  void mintGivesTheVectorAndTheNextClock() {
    for (JsonNode c : VECTORS.get("mint")) {
      JsonNode clock = c.get("clock");
      Sluid.Minted minted = Sluid.mint(new Sluid.Clock(clock.get("cluster_id").asInt(),
          clock.get("last_ms").asLong(), clock.get("sequence").asInt()),
          c.get("now_ms").asLong(), c.get("first_sequence").asInt());
      assertEquals(c.get("text").asText(), Sluid.format(minted.value()));
      assertEquals(c.get("next").get("last_ms").asLong(), minted.next().lastMs());
      assertEquals(c.get("next").get("sequence").asInt(), minted.next().sequence());
    }
  }

  @Test
  void aGeneratorMintsStrictlyIncreasingIds() {
    Sluid.Generator generator = new Sluid.Generator(2);
    Set<String> seen = new HashSet<>();
    String previous = "";
    for (int i = 0; i < 3000; i++) {
      String next = generator.next();
      assertTrue(next.compareTo(previous) > 0, next + " after " + previous);
      assertTrue(seen.add(next));
      previous = next;
    }
  }

  @Test
  void theGeneratedBuilderFillsTheSchemaDefaults() {
    JobSpec spec = JobSpec.newBuilder().setUser("").setCommand(List.of("true")).build();
    assertEquals(1, spec.getNodesMin());
    assertEquals(1, spec.getNtasks());
    assertEquals(1, spec.getCpusPerTask());
  }
}
