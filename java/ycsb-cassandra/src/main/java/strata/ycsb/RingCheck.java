/*
 * Licensed under the Apache License, Version 2.0. Part of strata.
 */
package strata.ycsb;

import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ConsistencyLevel;
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

/**
 * Are all nodes of a cluster Up and Normal ("UN" in nodetool's words), seen from each node?
 *
 * <p>nodetool needs JMX, and JMX on one port per node is the port juggling the loopback
 * addresses avoid; so this asks over CQL instead. For each node, with that node alone as
 * coordinator: {@code system.local} says it finished bootstrapping, {@code system.peers_v2}
 * lists every other node (a peer is written there when it turns Normal), and a write and a
 * read at consistency ALL on a keyspace with replication factor = the node count succeed.
 * With RF = N every node is a replica of every key, and a coordinator refuses ALL at once
 * (UnavailableException) when its failure detector holds any replica down: so success is
 * "every node sees every node up and owning tokens". The probe keyspace is dropped again.
 *
 * <p>Usage: {@code RingCheck HOSTS PORT}; HOSTS comma-separated. Prints one JSON object;
 * exit 0 when all is well, 1 when not, 2 on bad usage.
 */
public final class RingCheck {
  static final String KEYSPACE = "strata_ringcheck";

  private RingCheck() {
  }

  public static void main(String[] args) {
    if (args.length != 2) {
      System.err.println("usage: RingCheck HOST[,HOST...] PORT");
      System.exit(2);
    }
    List<String> hosts = new ArrayList<>();
    Collections.addAll(hosts, args[0].split(","));
    int port = Integer.parseInt(args[1]);
    StringBuilder json = new StringBuilder("{\"nodes\": [");
    boolean ok = true;
    try {
      createProbeKeyspace(hosts, port);
      for (int i = 0; i < hosts.size(); i++) {
        String[] res = checkNode(hosts, hosts.get(i), port);
        ok &= res[0].equals("true");
        json.append(i == 0 ? "" : ", ").append(res[1]);
      }
      dropProbeKeyspace(hosts, port);
    } catch (RuntimeException e) {
      ok = false;
      json.append("], \"error\": ").append(quote(e.toString())).append(", \"ok\": false}");
      System.out.println(json);
      System.exit(1);
    }
    System.out.println(json.append("], \"ok\": ").append(ok).append("}"));
    System.exit(ok ? 0 : 1);
  }

  private static Cluster only(String host, int port) {
    InetSocketAddress addr = new InetSocketAddress(host, port);
    return Cluster.builder().addContactPointsWithPorts(addr).withoutJMXReporting()
        .withLoadBalancingPolicy(new WhiteListPolicy(DCAwareRoundRobinPolicy.builder().build(), Collections.singletonList(addr)))
        .build();
  }

  private static void createProbeKeyspace(List<String> hosts, int port) {
    try (Cluster c = only(hosts.get(0), port); Session s = c.connect()) {
      s.execute("CREATE KEYSPACE IF NOT EXISTS " + KEYSPACE + " WITH replication = {'class': 'SimpleStrategy', "
          + "'replication_factor': " + hosts.size() + "}");
      s.execute("CREATE TABLE IF NOT EXISTS " + KEYSPACE + ".probe (k text PRIMARY KEY, v text)");
    }
  }

  private static void dropProbeKeyspace(List<String> hosts, int port) {
    try (Cluster c = only(hosts.get(0), port); Session s = c.connect()) {
      s.execute("DROP KEYSPACE IF EXISTS " + KEYSPACE);
    }
  }

  /** {ok, json} for one node as coordinator. */
  private static String[] checkNode(List<String> hosts, String host, int port) {
    StringBuilder j = new StringBuilder("{\"address\": ").append(quote(host));
    boolean ok;
    try (Cluster c = only(host, port); Session s = c.connect()) {
      Row local = s.execute("SELECT bootstrapped, tokens FROM system.local").one();
      String bootstrapped = local.getString("bootstrapped");
      int tokens = local.getSet("tokens", String.class).size();
      TreeSet<String> peers = new TreeSet<>();
      for (Row r : s.execute("SELECT peer FROM system.peers_v2")) {
        peers.add(r.getInet("peer").getHostAddress());
      }
      TreeSet<String> others = new TreeSet<>(hosts);
      others.remove(host);
      String err = allWriteRead(s, host);
      ok = "COMPLETED".equals(bootstrapped) && tokens > 0 && peers.containsAll(others) && err == null;
      j.append(", \"bootstrapped\": ").append(quote(bootstrapped)).append(", \"tokens\": ").append(tokens)
          .append(", \"peers\": ").append(list(peers)).append(", \"all_ok\": ").append(err == null);
      if (err != null) {
        j.append(", \"all_error\": ").append(quote(err));
      }
    } catch (RuntimeException e) {
      ok = false;
      j.append(", \"error\": ").append(quote(e.toString()));
    }
    return new String[] {String.valueOf(ok), j.append(", \"ok\": ").append(ok).append("}").toString()};
  }

  private static String allWriteRead(Session s, String host) {
    try {
      s.execute(new SimpleStatement("INSERT INTO " + KEYSPACE + ".probe (k, v) VALUES (?, ?)", host, "up")
          .setConsistencyLevel(ConsistencyLevel.ALL));
      Row r = s.execute(new SimpleStatement("SELECT v FROM " + KEYSPACE + ".probe WHERE k = ?", host)
          .setConsistencyLevel(ConsistencyLevel.ALL)).one();
      return r != null && "up".equals(r.getString("v")) ? null : "read at ALL did not return the write";
    } catch (RuntimeException e) {
      return e.toString();
    }
  }

  private static String list(TreeSet<String> items) {
    StringBuilder b = new StringBuilder("[");
    for (String s : items) {
      b.append(b.length() > 1 ? ", " : "").append(quote(s));
    }
    return b.append("]").toString();
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char ch : String.valueOf(s).toCharArray()) {
      if (ch == '"' || ch == '\\') {
        b.append('\\').append(ch);
      } else if (ch < 0x20) {
        b.append(String.format("\\u%04x", (int) ch));
      } else {
        b.append(ch);
      }
    }
    return b.append('"').toString();
  }
}
