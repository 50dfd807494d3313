/*
 * Licensed under the Apache License, Version 2.0. Part of strata.
 */
package strata.ycsb;

import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ResultSet;
import com.datastax.driver.core.Row;
import com.datastax.driver.core.Session;
import com.datastax.driver.core.SimpleStatement;
import com.datastax.driver.core.policies.DCAwareRoundRobinPolicy;
import com.datastax.driver.core.policies.WhiteListPolicy;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What each Cassandra node says of where its reads and writes went, read over CQL from its virtual
 * tables (Cassandra 5.0's {@code system_views}; JMX stays off).
 *
 * <ul>
 *   <li>{@code read}: per node, the memtable flushes and compactions done and pending
 *       ({@code thread_pools}), the table's SSTables on disk ({@code disk_usage}, whole MiB), its
 *       local reads and writes ({@code local_read_latency}, {@code local_write_latency}), the key and
 *       row caches ({@code caches}) and the durability settings in force ({@code settings}).
 *   <li>{@code probe}: the same and, from {@code PROBES} traced reads of the table's keys with that node as coordinator, the SSTables each
 *       read looked into (the distinct SSTables its trace names: "Partition index found for sstable N", "Key cache
 *       hit for sstable N"), and the reads whose trace did not complete in time ({@code untraced}).
 *   <li>{@code flush}: every memtable of the table written to SSTables before the measured run, as
 *       nodetool flush would, without JMX: the table's {@code memtable_flush_period_in_ms} is set to
 *       {@code PERIOD_MS} (each memtable then flushes once that old), until every node's flush writer
 *       has completed a flush more and is idle, and set back to 0 (Cassandra's default: never).
 * </ul>
 *
 * <p>Usage: {@code Counters read|probe|flush HOSTS PORT KEYSPACE TABLE}; HOSTS comma-separated. Prints one
 * JSON object; exit 0, 1 when a node could not be read (its entry says why), 2 on bad usage.
 */
public final class Counters {
  static final int PROBES = 20;
  static final int PERIOD_MS = 1000;
  static final long TRACE_WAIT_MS = 20_000;
  static final long FLUSH_TIMEOUT_MS = 120_000;
  static final String[] POOLS = {"MemtableFlushWriter", "CompactionExecutor"};
  static final String[] SETTINGS = {
    "commitlog_sync", "commitlog_sync_period", "commitlog_sync_group_window", "commitlog_disk_access_mode",
    "memtable_heap_space", "memtable_offheap_space", "memtable_allocation_type", "disk_access_mode",
    "key_cache_size", "row_cache_size", "file_cache_size"
  };
  static final List<String> MODES = List.of("read", "probe", "flush");
  // the trace lines of an SSTable a read looked into (not those of one its bloom filter or index skipped)
  static final Pattern READ_SSTABLE = Pattern.compile("(?:Partition index found|Key cache hit) for sstable (\\d+)");

  private Counters() {
  }

  public static void main(String[] args) {
    if (args.length == 1 && args[0].equals("names")) {
      System.out.println(names());
      System.exit(0);
    }
    if (args.length != 5 || !MODES.contains(args[0])) {
      System.err.println("usage: Counters read|probe|flush HOST[,HOST...] PORT KEYSPACE TABLE, or Counters names");
      System.exit(2);
    }
    List<String> hosts = new ArrayList<>();
    Collections.addAll(hosts, args[1].split(","));
    int port = Integer.parseInt(args[2]);
    String ks = args[3];
    String table = args[4];
    if (args[0].equals("flush")) {
      String res = flush(hosts, port, ks, table);
      System.out.println(res);
      System.exit(res.contains("\"ok\": true") ? 0 : 1);
    }
    StringBuilder json = new StringBuilder("{\"nodes\": [");
    boolean ok = true;
    for (int i = 0; i < hosts.size(); i++) {
      String[] res = node(hosts.get(i), port, ks, table, args[0].equals("probe"));
      ok &= res[0].equals("true");
      json.append(i == 0 ? "" : ", ").append(res[1]);
    }
    System.out.println(json.append("], \"ok\": ").append(ok).append("}"));
    System.exit(ok ? 0 : 1);
  }

  static Cluster only(String host, int port) {
    InetSocketAddress addr = new InetSocketAddress(host, port);
    return Cluster.builder().addContactPointsWithPorts(addr).withoutJMXReporting()
        .withLoadBalancingPolicy(new WhiteListPolicy(DCAwareRoundRobinPolicy.builder().build(), Collections.singletonList(addr)))
        .build();
  }

  /** {ok, json} of one node's counters. */
  static String[] node(String host, int port, String ks, String table, boolean probe) {
    StringBuilder j = new StringBuilder("{\"address\": ").append(RingCheck.quote(host));
    try (Cluster c = only(host, port); Session s = c.connect()) {
      for (Row r : s.execute("SELECT name, completed_tasks, pending_tasks, active_tasks FROM system_views.thread_pools")) {
        for (String pool : POOLS) {
          if (pool.equals(r.getString("name"))) {
            j.append(", \"").append(pool).append("\": {\"completed\": ").append(r.getLong("completed_tasks"))
                .append(", \"pending\": ").append(r.getInt("pending_tasks"))
                .append(", \"active\": ").append(r.getInt("active_tasks")).append("}");
          }
        }
      }
      Row du = s.execute(new SimpleStatement(
          "SELECT mebibytes FROM system_views.disk_usage WHERE keyspace_name = ? AND table_name = ?", ks, table)).one();
      j.append(", \"sstable_mib\": ").append(du == null ? "null" : String.valueOf(du.getLong("mebibytes")));
      j.append(", \"local_reads\": ").append(count(s, "local_read_latency", ks, table));
      j.append(", \"local_writes\": ").append(count(s, "local_write_latency", ks, table));
      j.append(", \"caches\": {");
      boolean first = true;
      for (Row r : s.execute("SELECT name, entry_count, hit_count, request_count, size_bytes, capacity_bytes "
          + "FROM system_views.caches")) {
        String name = r.getString("name");
        if (!name.equals("keys") && !name.equals("rows")) {
          continue;
        }
        j.append(first ? "" : ", ").append(RingCheck.quote(name)).append(": {\"entries\": ").append(r.getInt("entry_count"))
            .append(", \"hits\": ").append(r.getLong("hit_count")).append(", \"requests\": ").append(r.getLong("request_count"))
            .append(", \"size_bytes\": ").append(r.getLong("size_bytes"))
            .append(", \"capacity_bytes\": ").append(r.getLong("capacity_bytes")).append("}");
        first = false;
      }
      j.append("}, \"settings\": {");
      first = true;
      for (Row r : s.execute("SELECT name, value FROM system_views.settings")) {
        for (String name : SETTINGS) {
          if (name.equals(r.getString("name"))) {
            j.append(first ? "" : ", ").append(RingCheck.quote(name)).append(": ").append(RingCheck.quote(r.getString("value")));
            first = false;
          }
        }
      }
      j.append("}");
      if (probe) {
        String traced = probe(s, ks, table);  // before its key: a probe that fails leaves valid JSON
        j.append(", \"probe\": ").append(traced);
      }
    } catch (RuntimeException | InterruptedException e) {
      return new String[] {"false", j.append(", \"error\": ").append(RingCheck.quote(e.toString())).append("}").toString()};
    }
    return new String[] {"true", j.append("}").toString()};
  }

  static String count(Session s, String view, String ks, String table) {
    Row r = s.execute(new SimpleStatement(
        "SELECT count FROM system_views." + view + " WHERE keyspace_name = ? AND table_name = ?", ks, table)).one();
    return r == null ? "null" : String.valueOf(r.getLong("count"));
  }

  /**
   * The SSTables each of PROBES traced reads looked into, as Cassandra's trace says it (0: its memtables alone).
   * The traces are read from system_traces once every read is done, each given TRACE_WAIT_MS to complete (its
   * session's duration set): the driver's own fetch gives up after a few milliseconds on a busy node. A read
   * whose trace never completed is counted in "untraced", not guessed.
   */
  static String probe(Session s, String ks, String table) throws InterruptedException {
    List<String> keys = new ArrayList<>();
    for (Row r : s.execute("SELECT y_id FROM " + ks + "." + table + " LIMIT " + PROBES)) {
      keys.add(r.getString("y_id"));
    }
    List<UUID> traces = new ArrayList<>();
    for (String key : keys) {
      ResultSet rs = s.execute(new SimpleStatement("SELECT * FROM " + ks + "." + table + " WHERE y_id = ?", key)
          .enableTracing());
      traces.add(rs.getExecutionInfo().getQueryTrace().getTraceId());
    }
    List<Integer> merged = new ArrayList<>();
    int untraced = 0;
    long deadline = System.currentTimeMillis() + TRACE_WAIT_MS;
    for (UUID id : traces) {
      Integer n = sstablesRead(s, id);
      while (n == null && System.currentTimeMillis() < deadline) {
        Thread.sleep(200);
        n = sstablesRead(s, id);
      }
      if (n == null) {
        untraced++;
      } else {
        merged.add(n);
      }
    }
    StringBuilder b = new StringBuilder("{\"reads\": ").append(traces.size()).append(", \"untraced\": ")
        .append(untraced).append(", \"sstables_read\": [");
    for (int i = 0; i < merged.size(); i++) {
      b.append(i == 0 ? "" : ", ").append(merged.get(i));
    }
    return b.append("]}").toString();
  }

  /** The distinct SSTables one traced read named, or null while its trace is not complete. */
  static Integer sstablesRead(Session s, UUID id) {
    Row session = s.execute(new SimpleStatement(
        "SELECT duration FROM system_traces.sessions WHERE session_id = ?", id)).one();
    if (session == null || session.isNull("duration")) {
      return null;
    }
    TreeSet<String> read = new TreeSet<>();
    for (Row e : s.execute(new SimpleStatement(
        "SELECT activity FROM system_traces.events WHERE session_id = ?", id))) {
      Matcher m = READ_SSTABLE.matcher(e.getString("activity"));
      if (m.find()) {
        read.add(m.group(1));
      }
    }
    return read.size();
  }

  /**
   * Every name cassandra.yaml takes, with its type: the public fields of Cassandra's own Config class and
   * the older names they replace (its {@code @Replaces}), read by reflection from the jars on the class path.
   */
  static String names() {
    StringBuilder b = new StringBuilder("{\"version\": ");
    try {
      Class<?> config = Class.forName("org.apache.cassandra.config.Config");
      Package pkg = config.getPackage();
      b.append(RingCheck.quote(pkg == null ? null : pkg.getImplementationVersion())).append(", \"names\": {");
      boolean first = true;
      for (java.lang.reflect.Field f : config.getFields()) {
        if (java.lang.reflect.Modifier.isStatic(f.getModifiers())) {
          continue;
        }
        String type = f.getType().getSimpleName();
        b.append(first ? "" : ", ").append(RingCheck.quote(f.getName())).append(": ").append(RingCheck.quote(type));
        first = false;
        for (java.lang.annotation.Annotation a : f.getAnnotations()) {
          for (String old : replaced(a)) {
            b.append(", ").append(RingCheck.quote(old)).append(": ").append(RingCheck.quote("replaced:" + f.getName()));
          }
        }
      }
      return b.append("}}").toString();
    } catch (ReflectiveOperationException e) {
      return "{\"error\": " + RingCheck.quote(e.toString()) + "}";
    }
  }

  /** The old names a Replaces (or a ReplacesList of them) gives. */
  static List<String> replaced(java.lang.annotation.Annotation a) throws ReflectiveOperationException {
    List<String> out = new ArrayList<>();
    String name = a.annotationType().getSimpleName();
    if (name.equals("Replaces")) {
      out.add((String) a.annotationType().getMethod("oldName").invoke(a));
    } else if (name.equals("ReplacesList")) {
      for (Object r : (Object[]) a.annotationType().getMethod("value").invoke(a)) {
        out.addAll(replaced((java.lang.annotation.Annotation) r));
      }
    }
    return out;
  }

  static long[] flushWriter(List<String> hosts, int port) {
    long[] out = new long[hosts.size() * 2];
    for (int i = 0; i < hosts.size(); i++) {
      try (Cluster c = only(hosts.get(i), port); Session s = c.connect()) {
        Row r = s.execute("SELECT completed_tasks, pending_tasks, active_tasks FROM system_views.thread_pools "
            + "WHERE name = 'MemtableFlushWriter'").one();
        out[2 * i] = r.getLong("completed_tasks");
        out[2 * i + 1] = r.getInt("pending_tasks") + r.getInt("active_tasks");
      }
    }
    return out;
  }

  static String flush(List<String> hosts, int port, String ks, String table) {
    long t0 = System.currentTimeMillis();
    String alter = "ALTER TABLE " + ks + "." + table + " WITH memtable_flush_period_in_ms = ";
    try (Cluster c = only(hosts.get(0), port); Session s = c.connect()) {
      long[] before = flushWriter(hosts, port);
      s.execute(alter + PERIOD_MS);
      boolean done = false;
      long[] now = before;
      try {
        while (!done && System.currentTimeMillis() - t0 < FLUSH_TIMEOUT_MS) {
          Thread.sleep(PERIOD_MS / 4);
          now = flushWriter(hosts, port);
          done = true;
          for (int i = 0; i < hosts.size(); i++) {
            done &= now[2 * i] > before[2 * i] && now[2 * i + 1] == 0;
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        s.execute(alter + "0");
      }
      StringBuilder b = new StringBuilder("{\"flushes\": [");
      for (int i = 0; i < hosts.size(); i++) {
        b.append(i == 0 ? "" : ", ").append(now[2 * i] - before[2 * i]);
      }
      return b.append("], \"seconds\": ").append((System.currentTimeMillis() - t0) / 1000.0)
          .append(", \"ok\": ").append(done).append("}").toString();
    } catch (RuntimeException e) {
      return "{\"error\": " + RingCheck.quote(e.toString()) + ", \"ok\": false}";
    }
  }
}
