/*
 * Streamhouse's launcher for Kafka's SmokeTestDriver at a chosen size (our code, not Kafka's).
 *
 * Kafka's own main, `StreamsSmokeTest <props> run`, always generates 20 keys x 1000 values over 90 s.
 * That is what `make system-test` runs; the short form in tests/system needs fewer records, so this
 * calls the same public driver methods Kafka's main calls -- SmokeTestDriver.generate(kafka, numKeys,
 * maxRecordsPerKey, duration) then SmokeTestDriver.verify(kafka, data, maxRecordsPerKey, eos) -- with
 * the sizes given. The verdict lines (SUCCESS / FAILURE, ALL-RECORDS-DELIVERED) are the driver's.
 *
 * Run as a single-file source program (no build step):
 *   java -cp '<state>/jvm/kafka-streams-tests/libs/*' SizedSmokeTestDriver.java <props> <numKeys> <maxRecordsPerKey> <seconds>
 */

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.tests.SmokeTestDriver;

public class SizedSmokeTestDriver {
    public static void main(final String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: SizedSmokeTestDriver <props> <numKeys> <maxRecordsPerKey> <seconds>");
            System.exit(2);
        }
        final Properties props = Utils.loadProps(args[0]);
        final String kafka = props.getProperty("bootstrap.servers");
        final boolean eos = "exactly_once_v2".equals(props.getProperty("processing.guarantee"));
        final int numKeys = Integer.parseInt(args[1]);
        final int maxRecordsPerKey = Integer.parseInt(args[2]);
        final Duration timeToSpend = Duration.ofSeconds(Long.parseLong(args[3]));
        System.out.println("StreamsTest instance started (SizedSmokeTestDriver)");
        System.out.println("numKeys=" + numKeys + " maxRecordsPerKey=" + maxRecordsPerKey + " seconds=" + args[3]);
        System.out.flush();
        final Map<String, Set<Integer>> allData = SmokeTestDriver.generate(kafka, numKeys, maxRecordsPerKey, timeToSpend);
        SmokeTestDriver.verify(kafka, allData, maxRecordsPerKey, eos);
        System.out.flush();
        // the driver's producer and consumer threads are closed; exit like Kafka's main does when done
        System.exit(0);
    }
}
