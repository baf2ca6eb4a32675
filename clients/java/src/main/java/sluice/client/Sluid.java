package sluice.client;

/**
 * SLUIDs as Sluice mints them (docs/wire-format.md, "SLUIDs"): 12-bit cluster id, 42-bit Unix
 * time in milliseconds, 10-bit sequence; text form "s" + 13 Crockford Base32 characters.
 * Java's long is signed, so the 64-bit value is handled with the unsigned helpers of Long.
 */
public final class Sluid {
  public static final String ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  public static final int CLUSTER_ID_MIN = 2;
  public static final int CLUSTER_ID_MAX = 4094;
  public static final int SEQUENCE_MAX = 1023;
  private static final long TIME_MAX = (1L << 42) - 1;

  /** The minting state: the cluster id, the last millisecond used and its sequence. */
  public record Clock(int clusterId, long lastMs, int sequence) {
    public Clock {
      if (clusterId < CLUSTER_ID_MIN || clusterId > CLUSTER_ID_MAX) {
        throw new IllegalArgumentException("cluster id " + clusterId + " is outside 2..4094");
      }
    }

    public Clock(int clusterId) {
      this(clusterId, 0, -1);
    }
  }

  /** A minted id and the clock after it. */
  public record Minted(long value, Clock next) {}

  private Sluid() {}

  public static long compose(int clusterId, long unixMs, int sequence) {
    if (clusterId < 0 || clusterId > 0xFFF) throw new IllegalArgumentException("cluster id > 12 bits");
    if (unixMs < 0 || unixMs > TIME_MAX) throw new IllegalArgumentException("time > 42 bits");
    if (sequence < 0 || sequence > SEQUENCE_MAX) throw new IllegalArgumentException("sequence > 10 bits");
    return ((long) clusterId << 52) | (unixMs << 10) | sequence;
  }

  /**
   * The next id: a new millisecond starts at {@code firstSequence}; within the same (or an
   * earlier) millisecond the sequence counts on; past 1023 the next millisecond is borrowed.
   */
  public static Minted mint(Clock clock, long nowMs, int firstSequence) {
    long ms;
    int seq;
    if (nowMs > clock.lastMs()) {
      ms = nowMs;
      seq = firstSequence;
    } else if (clock.sequence() < SEQUENCE_MAX) {
      ms = clock.lastMs();
      seq = clock.sequence() + 1;
    } else {
      ms = clock.lastMs() + 1;
      seq = 0;
    }
    return new Minted(compose(clock.clusterId(), ms, seq), new Clock(clock.clusterId(), ms, seq));
  }

  public static String format(long value) {
    if (value == 0) throw new IllegalArgumentException("zero is not a SLUID");
    StringBuilder out = new StringBuilder("s");
    for (int shift = 60; shift >= 0; shift -= 5) {
      out.append(ALPHABET.charAt((int) ((value >>> shift) & 0x1F)));
    }
    return out.toString();
  }

  /** Parses the text form; accepts s/S, lower case and Crockford's O=0, I=L=1. */
  public static long parse(String text) {
    if (text.length() != 14 || (text.charAt(0) != 's' && text.charAt(0) != 'S')) {
      throw new IllegalArgumentException(text + " is not a SLUID: expected 's' and 13 characters");
    }
    long value = 0;
    for (int i = 1; i < 14; i++) {
      char c = Character.toUpperCase(text.charAt(i));
      c = c == 'O' ? '0' : (c == 'I' || c == 'L') ? '1' : c;
      int digit = ALPHABET.indexOf(c);
      if (digit < 0 || (i == 1 && digit > 0xF)) {
        throw new IllegalArgumentException(text + " is not a SLUID: bad character " + text.charAt(i));
      }
      value = (value << 5) | digit;
    }
    if (value == 0) throw new IllegalArgumentException(text + " is not a SLUID: zero");
    return value;
  }

  /** Thread-safe minting from the wall clock, a random first sequence in the lower half. */
  public static final class Generator {
    private Clock clock;
    private final java.security.SecureRandom random = new java.security.SecureRandom();

    public Generator(int clusterId) {
      this.clock = new Clock(clusterId);
    }

    public synchronized String next() {
      Minted minted = mint(clock, System.currentTimeMillis(), random.nextInt(512));
      clock = minted.next();
      return format(minted.value());
    }
  }

}
