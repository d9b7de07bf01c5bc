package io.streamhouse.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Kafka Streams as a benchmark peer of the edge (docs/benchmarks.md, "Peers"). One main, four topologies,
 * each the Java form of the edge's benchmark topology with the same serdes (String keys, UTF-8 JSON object
 * values) and the same store settings (RocksDB with a changelog, record caches off so there is one output
 * per update):
 *
 * <pre>
 *   count     stream.groupByKey().count(as("counts")) -> {"user", "count"}          (streamhouse_count.py)
 *   windowed  ... windowedBy(1 min tumbling, no grace).count(as("wcounts"))
 *                 -> (user, {"user", "start", "count"})                              (streamhouse_windowed.py)
 *   enrich    stream.leftJoin(table(users, as("users")), event + tier/region)       (streamhouse_count.py)
 *   join      orders.join(payments, +-5 min, grace 1 min) -> order, customer, amount, paid, dt (edge_join)
 * </pre>
 *
 * <p>The harness times it from outside like every other system: this process writes the wall-clock time at
 * which its topology saw its first input record to the stats file (a {@code peek} at the source, so the
 * clock includes the JVM's JIT warm-up on the measured records but not class loading, group join or
 * restoration), and the harness notes when the expected number of outputs is on the broker.
 *
 * <p>Usage: {@code KafkaStreamsBench <count|windowed|enrich|join> --bootstrap B --input T [--input2 T2]
 * --output O --app-id A --state-dir D --stats F [--commit-interval-ms 1000] [--retention-ms R]
 * [-c key=value ...]}. SIGTERM closes the app and writes the final stats.
 */
public final class KafkaStreamsBench {
  static final ObjectMapper JSON = new ObjectMapper();
  static final long WINDOW_MS = 60_000L;
  static final long JOIN_DIFF_MS = 300_000L;
  static final long JOIN_GRACE_MS = 60_000L;

  /** The edge's {@code Serdes.json()}: a JSON document as UTF-8 bytes; null stays null. */
  static final class JsonSerde implements Serde<JsonNode> {
    @Override
    public Serializer<JsonNode> serializer() {
      return (topic, node) -> {
        if (node == null) {
          return null;
        }
        try {
          return JSON.writeValueAsBytes(node);
        } catch (IOException e) {
          throw new RuntimeException(e);
        }
      };
    }

    @Override
    public Deserializer<JsonNode> deserializer() {
      return (topic, bytes) -> {
        if (bytes == null) {
          return null;
        }
        try {
          return JSON.readTree(bytes);
        } catch (IOException e) {
          throw new RuntimeException(e);
        }
      };
    }
  }

  private KafkaStreamsBench() {}

  public static void main(String[] argv) throws Exception {
    if (argv.length < 1) {
      throw new IllegalArgumentException("usage: KafkaStreamsBench <count|windowed|enrich|join> --option value ...");
    }
    String app = argv[0];
    Map<String, String> opt = new LinkedHashMap<>();
    Properties extra = new Properties();
    for (int i = 1; i < argv.length; i += 2) {
      if (i + 1 >= argv.length) {
        throw new IllegalArgumentException("missing value after " + argv[i]);
      }
      if (argv[i].equals("-c")) {
        String[] kv = argv[i + 1].split("=", 2);
        extra.setProperty(kv[0], kv[1]);
      } else {
        opt.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
      }
    }
    Path stats = Path.of(required(opt, "stats"));
    AtomicLong firstAtMs = new AtomicLong(0);
    AtomicLong seen = new AtomicLong(0);
    AtomicBoolean reported = new AtomicBoolean(false);
    Runnable onRecord = () -> {
      seen.incrementAndGet();
      if (!reported.get() && reported.compareAndSet(false, true)) {
        firstAtMs.set(System.currentTimeMillis());
        writeStats(stats, Map.of("first_consumed_at", firstAtMs.get() / 1000.0));
      }
    };

    Topology topology = build(app, opt, onRecord);
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, required(opt, "app-id"));
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, required(opt, "bootstrap"));
    p.put(StreamsConfig.STATE_DIR_CONFIG, required(opt, "state-dir"));
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, opt.getOrDefault("commit-interval-ms", "1000"));
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0); // caching off: one output per update
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    p.putAll(extra);
    System.err.println("kafka-streams-bench " + app + " config " + p);

    KafkaStreams streams = new KafkaStreams(topology, p);
    CountDownLatch done = new CountDownLatch(1);
    streams.setStateListener((now, before) -> {
      if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
        done.countDown();
      }
    });
    streams.setUncaughtExceptionHandler(e -> {
      System.err.println("stream thread failed: " + e);
      e.printStackTrace();
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
          .SHUTDOWN_CLIENT;
    });
    Thread hook = new Thread(() -> {
      boolean clean = streams.close(Duration.ofSeconds(60));
      Map<String, Object> s = new LinkedHashMap<>();
      if (firstAtMs.get() > 0) {
        s.put("first_consumed_at", firstAtMs.get() / 1000.0);
      }
      s.put("records_seen", seen.get());
      s.put("final_state", streams.state().toString());
      s.put("closed_cleanly", clean);
      s.put("jvm", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
      writeStats(stats, s);
      done.countDown();
    });
    Runtime.getRuntime().addShutdownHook(hook);
    streams.start();
    done.await();
  }

  static Topology build(String app, Map<String, String> opt, Runnable onRecord) {
    Serde<String> str = Serdes.String();
    Serde<JsonNode> json = new JsonSerde();
    Consumed<String, JsonNode> consumed = Consumed.with(str, json);
    Produced<String, JsonNode> produced = Produced.with(str, json);
    StreamsBuilder b = new StreamsBuilder();
    String input = required(opt, "input");
    String output = required(opt, "output");
    switch (app) {
      case "count" -> {
        KStream<String, JsonNode> in = b.stream(input, consumed).peek((k, v) -> onRecord.run());
        in.groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts").withCachingDisabled())
            .toStream()
            .mapValues((k, n) -> (JsonNode) JSON.createObjectNode().put("user", k).put("count", n))
            .to(output, produced);
      }
      case "windowed" -> {
        Materialized<String, Long, WindowStore<Bytes, byte[]>> store =
            Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("wcounts").withCachingDisabled();
        if (opt.containsKey("retention-ms")) {
          store = store.withRetention(Duration.ofMillis(Long.parseLong(opt.get("retention-ms"))));
        }
        b.stream(input, consumed)
            .peek((k, v) -> onRecord.run())
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(WINDOW_MS)))
            .count(store)
            .toStream()
            .map((wk, n) -> KeyValue.pair(wk.key(), (JsonNode) JSON.createObjectNode()
                .put("user", wk.key()).put("start", wk.window().start()).put("count", n)))
            .to(output, produced);
      }
      case "enrich" -> {
        KTable<String, JsonNode> users = b.table(required(opt, "input2"), consumed,
            Materialized.<String, JsonNode, KeyValueStore<Bytes, byte[]>>as("users"));
        b.stream(input, consumed)
            .peek((k, v) -> onRecord.run())
            .leftJoin(users, (event, user) -> {
              ObjectNode out = ((ObjectNode) event).deepCopy();
              out.set("tier", user == null ? NullNode.instance : user.get("tier"));
              out.set("region", user == null ? NullNode.instance : user.get("region"));
              return (JsonNode) out;
            })
            .to(output, produced);
      }
      case "join" -> {
        KStream<String, JsonNode> orders = b.stream(input, consumed).peek((k, v) -> onRecord.run());
        KStream<String, JsonNode> payments =
            b.stream(required(opt, "input2"), consumed).peek((k, v) -> onRecord.run());
        orders.join(payments, (order, payment) -> {
              ObjectNode out = JSON.createObjectNode();
              out.put("order", order.get("order").asLong());
              out.put("customer", order.get("customer").asLong());
              out.set("amount", order.get("amount"));
              out.set("paid", payment.get("paid"));
              out.put("dt", payment.get("ts").asLong() - order.get("ts").asLong());
              return (JsonNode) out;
            },
            JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(JOIN_DIFF_MS), Duration.ofMillis(JOIN_GRACE_MS)),
            StreamJoined.with(str, json, json))
            .to(output, produced);
      }
      default -> throw new IllegalArgumentException("unknown workload " + app);
    }
    return b.build();
  }

  static String required(Map<String, String> opt, String name) {
    String v = opt.get(name);
    if (v == null || v.isEmpty()) {
      throw new IllegalArgumentException("--" + name + " is required");
    }
    return v;
  }

  /** Atomic write (temp file + rename), so the harness never reads half a file. */
  static synchronized void writeStats(Path path, Map<String, ?> data) {
    try {
      Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
      Files.write(tmp, JSON.writeValueAsString(data).getBytes(StandardCharsets.UTF_8));
      Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      System.err.println("could not write stats " + path + ": " + e);
    }
  }
}
