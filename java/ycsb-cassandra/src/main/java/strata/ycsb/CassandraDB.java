/*
 * Licensed under the Apache License, Version 2.0. Part of strata.
 */
package strata.ycsb;

import com.datastax.driver.core.BoundStatement;
import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ColumnDefinitions;
import com.datastax.driver.core.ConsistencyLevel;
import com.datastax.driver.core.Host;
import com.datastax.driver.core.HostDistance;
import com.datastax.driver.core.KeyspaceMetadata;
import com.datastax.driver.core.NettyOptions;
import com.datastax.driver.core.PoolingOptions;
import com.datastax.driver.core.PreparedStatement;
import com.datastax.driver.core.QueryOptions;
import com.datastax.driver.core.ResultSet;
import com.datastax.driver.core.Row;
import com.datastax.driver.core.Session;
import com.datastax.driver.core.SocketOptions;
import com.datastax.driver.core.exceptions.NoHostAvailableException;
import io.netty.channel.EventLoopGroup;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * A YCSB binding for Apache Cassandra over the DataStax Java driver 3.x.
 *
 * <p>YCSB makes one DB object per client thread; they share one Cluster and Session
 * (reference counted, as YCSB's own cassandra binding does). The table is YCSB's
 * documented schema: {@code y_id varchar PRIMARY KEY, field0..fieldN-1 varchar}, created
 * (with the keyspace) when absent unless {@code cassandra.createschema=false}.
 *
 * <p>Differences from YCSB's own binding, each on purpose: a read of all fields returns
 * the fields only (not the key column), so YCSB's {@code dataintegrity=true} check
 * passes; values are copied out of the driver's buffer (not {@code array()}, which may be
 * a whole frame); statements are idempotent so the driver retries them on another node
 * after a connection error; and when no node at all is up the client stops at once with
 * exit code {@link #FATAL_EXIT} and a line starting with {@link #FATAL_MARK} (fail fast:
 * YCSB itself would count errors until its operation count or time ran out).
 */
public class CassandraDB extends DB {
  public static final String FATAL_MARK = "[strata-cassandra] FATAL:";
  public static final int FATAL_EXIT = 3;
  public static final String KEY = "y_id";

  public static final String HOSTS = "hosts";
  public static final String PORT = "port";
  public static final String KEYSPACE = "cassandra.keyspace";
  public static final String READ_CL = "cassandra.readconsistencylevel";
  public static final String WRITE_CL = "cassandra.writeconsistencylevel";
  public static final String REPLICATION_FACTOR = "cassandra.replicationfactor";
  public static final String CREATE_SCHEMA = "cassandra.createschema";
  public static final String CORE_CONNECTIONS = "cassandra.coreconnections";
  public static final String MAX_CONNECTIONS = "cassandra.maxconnections";
  public static final String CONNECT_TIMEOUT_MS = "cassandra.connecttimeoutmillis";
  public static final String READ_TIMEOUT_MS = "cassandra.readtimeoutmillis";
  public static final String FAIL_FAST = "cassandra.failfast";

  private static final Object LOCK = new Object();
  private static int refs = 0;
  private static Cluster cluster;
  private static Session session;
  private static ConsistencyLevel readCl;
  private static ConsistencyLevel writeCl;
  private static boolean failFast;
  private static String keyspace;
  private static final Map<String, PreparedStatement> STATEMENTS = new ConcurrentHashMap<>();
  private static final AtomicLong ERRORS = new AtomicLong();
  private static final AtomicBoolean EXITING = new AtomicBoolean();

  /**
   * Connect (once per client process) and create the schema if asked. Any failure here ends
   * the client with {@link #FATAL_EXIT}: YCSB itself would print the exception, run the
   * other threads, and exit 0 with no operations done.
   */
  @Override
  public void init() throws DBException {
    synchronized (LOCK) {
      refs++;
      if (session != null) {
        return;
      }
      Properties p = getProperties();
      String hosts = p.getProperty(HOSTS, "").trim();
      String where = hosts + ":" + p.getProperty(PORT, "9042");
      try {
        if (hosts.isEmpty()) {
          throw new DBException("property \"" + HOSTS + "\" is required (comma-separated node addresses)");
        }
        readCl = ConsistencyLevel.valueOf(p.getProperty(READ_CL, "QUORUM"));
        writeCl = ConsistencyLevel.valueOf(p.getProperty(WRITE_CL, "QUORUM"));
        failFast = Boolean.parseBoolean(p.getProperty(FAIL_FAST, "true"));
        keyspace = p.getProperty(KEYSPACE, "ycsb");
        cluster = buildCluster(p, hosts.split("\\s*,\\s*"));
        session = cluster.connect();
        if (Boolean.parseBoolean(p.getProperty(CREATE_SCHEMA, "true"))) {
          createSchema(p);
        }
      } catch (NoHostAvailableException e) {
        closeShared();
        String why = "cannot connect to Cassandra at " + where + ": " + e.getMessage();
        fatal(why);
        throw new DBException(why, e);
      } catch (DBException | RuntimeException e) {
        closeShared();
        String why = "Cassandra setup at " + where + " failed: " + e.getMessage();
        fatal(why);
        throw new DBException(why, e);
      }
    }
  }

  private static Cluster buildCluster(Properties p, String[] hosts) {
    PoolingOptions pooling = new PoolingOptions();
    String core = p.getProperty(CORE_CONNECTIONS);
    String max = p.getProperty(MAX_CONNECTIONS);
    if (core != null || max != null) {
      int c = Integer.parseInt(core != null ? core : "1");
      int m = Integer.parseInt(max != null ? max : String.valueOf(Math.max(c, 1)));
      pooling.setConnectionsPerHost(HostDistance.LOCAL, c, Math.max(c, m));
    }
    SocketOptions socket = new SocketOptions();
    if (p.getProperty(CONNECT_TIMEOUT_MS) != null) {
      socket.setConnectTimeoutMillis(Integer.parseInt(p.getProperty(CONNECT_TIMEOUT_MS)));
    }
    if (p.getProperty(READ_TIMEOUT_MS) != null) {
      socket.setReadTimeoutMillis(Integer.parseInt(p.getProperty(READ_TIMEOUT_MS)));
    }
    return Cluster.builder()
        .addContactPoints(hosts)
        .withPort(Integer.parseInt(p.getProperty(PORT, "9042")))
        .withPoolingOptions(pooling)
        .withSocketOptions(socket)
        .withQueryOptions(new QueryOptions().setDefaultIdempotence(true))
        .withoutJMXReporting()
        .withNettyOptions(QUICK_CLOSE)
        .build();
  }

  /** The driver's default waits a 2 s quiet period when closing, which YCSB counts in its run time. */
  static final NettyOptions QUICK_CLOSE = new NettyOptions() {
    @Override
    public void onClusterClose(EventLoopGroup group) {
      group.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
    }
  };

  /** Keyspace (SimpleStrategy) and YCSB's table, if absent; an existing keyspace must have our RF. */
  private static void createSchema(Properties p) throws DBException {
    String ks = p.getProperty(KEYSPACE, "ycsb");
    String table = p.getProperty("table", "usertable");
    int rf = Integer.parseInt(p.getProperty(REPLICATION_FACTOR, "1"));
    int fieldCount = Integer.parseInt(p.getProperty("fieldcount", "10"));
    String prefix = p.getProperty("fieldnameprefix", "field");
    KeyspaceMetadata existing = cluster.getMetadata().getKeyspace(ks);
    if (existing != null) {
      String have = existing.getReplication().get("replication_factor");
      if (have != null && Integer.parseInt(have) != rf) {
        throw new DBException("keyspace " + ks + " exists with replication_factor " + have + ", not " + rf
            + ": drop it or use another cassandra.keyspace");
      }
    }
    session.execute("CREATE KEYSPACE IF NOT EXISTS " + ks + " WITH replication = "
        + "{'class': 'SimpleStrategy', 'replication_factor': " + rf + "}");
    StringBuilder cql = new StringBuilder("CREATE TABLE IF NOT EXISTS " + ks + "." + table + " (" + KEY
        + " varchar PRIMARY KEY");
    for (int i = 0; i < fieldCount; i++) {
      cql.append(", ").append(prefix).append(i).append(" varchar");
    }
    session.execute(cql.append(")").toString());
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (LOCK) {
      refs--;
      if (refs <= 0) {
        closeShared();
      }
    }
  }

  private static void closeShared() {
    STATEMENTS.clear();
    if (cluster != null) {
      cluster.close();
    }
    cluster = null;
    session = null;
    refs = 0;
  }

  private static PreparedStatement prepared(String cql, ConsistencyLevel cl) {
    return STATEMENTS.computeIfAbsent(cql, q -> session.prepare(q).setConsistencyLevel(cl));
  }

  /** Tables are named with their keyspace: no USE, which Cassandra 5 warns about with prepared statements. */
  private static String qualified(String table) {
    return keyspace + "." + table;
  }

  private static String columns(Set<String> fields) {
    return fields == null ? "*" : String.join(", ", new TreeSet<>(fields));
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      PreparedStatement st = prepared("SELECT " + columns(fields) + " FROM " + qualified(table) + " WHERE " + KEY
          + " = ? LIMIT 1", readCl);
      Row row = session.execute(st.bind(key)).one();
      if (row == null) {
        return Status.NOT_FOUND;
      }
      putFields(row, result);
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("read", key, e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    try {
      PreparedStatement st = prepared("SELECT " + columns(fields) + " FROM " + qualified(table) + " WHERE token(" + KEY
          + ") >= token(?) LIMIT ?", readCl);
      ResultSet rs = session.execute(st.bind(startkey, recordcount));
      for (Row row : rs) {
        HashMap<String, ByteIterator> tuple = new HashMap<>();
        putFields(row, tuple);
        result.add(tuple);
      }
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("scan", startkey, e);
    }
  }

  /** Every column but the key, as bytes copied out of the driver's buffer. */
  private static void putFields(Row row, Map<String, ByteIterator> out) {
    for (ColumnDefinitions.Definition def : row.getColumnDefinitions()) {
      String name = def.getName();
      if (KEY.equals(name)) {
        continue;
      }
      ByteBuffer val = row.getBytesUnsafe(name);
      if (val == null) {
        out.put(name, null);
      } else {
        byte[] bytes = new byte[val.remaining()];
        val.duplicate().get(bytes);
        out.put(name, new ByteArrayByteIterator(bytes));
      }
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      List<String> fields = new ArrayList<>(new TreeSet<>(values.keySet()));
      StringBuilder cql = new StringBuilder("UPDATE " + qualified(table) + " SET ");
      for (int i = 0; i < fields.size(); i++) {
        cql.append(i == 0 ? "" : ", ").append(fields.get(i)).append(" = ?");
      }
      PreparedStatement st = prepared(cql.append(" WHERE ").append(KEY).append(" = ?").toString(), writeCl);
      BoundStatement b = st.bind();
      for (int i = 0; i < fields.size(); i++) {
        b.setBytesUnsafe(i, ByteBuffer.wrap(values.get(fields.get(i)).toArray()));
      }
      b.setString(fields.size(), key);
      session.execute(b);
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("update", key, e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      List<String> fields = new ArrayList<>(new TreeSet<>(values.keySet()));
      StringBuilder cols = new StringBuilder(KEY);
      StringBuilder marks = new StringBuilder("?");
      for (String f : fields) {
        cols.append(", ").append(f);
        marks.append(", ?");
      }
      PreparedStatement st = prepared("INSERT INTO " + qualified(table) + " (" + cols + ") VALUES (" + marks + ")", writeCl);
      BoundStatement b = st.bind().setString(0, key);
      for (int i = 0; i < fields.size(); i++) {
        b.setBytesUnsafe(i + 1, ByteBuffer.wrap(values.get(fields.get(i)).toArray()));
      }
      session.execute(b);
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("insert", key, e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      PreparedStatement st = prepared("DELETE FROM " + qualified(table) + " WHERE " + KEY + " = ?", writeCl);
      session.execute(st.bind(key));
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("delete", key, e);
    }
  }

  /** An operation failed: fatal when no node is up (fail fast), else logged (sparingly) and counted by YCSB. */
  private static Status failed(String op, String key, RuntimeException e) {
    if (failFast && e instanceof NoHostAvailableException && noHostUp()) {
      fatal("no Cassandra node is up (" + op + " of " + key + "): " + e.getMessage());
    }
    long n = ERRORS.incrementAndGet();
    if (n <= 10 || n % 1000 == 0) {
      System.err.println("[strata-cassandra] error " + n + ": " + op + " of " + key + ": " + e);
    }
    return Status.ERROR;
  }

  private static boolean noHostUp() {
    Cluster c = cluster;
    if (c == null) {
      return true;
    }
    for (Host h : c.getMetadata().getAllHosts()) {
      if (h.isUp()) {
        return false;
      }
    }
    return true;
  }

  /** Say why once (other threads hit the same wall at the same time) and end the client. */
  static void fatal(String message) {
    if (!EXITING.compareAndSet(false, true)) {
      return;   // System.exit is under way in another thread
    }
    System.err.println(FATAL_MARK + " " + message);
    System.err.flush();
    System.out.flush();
    System.exit(FATAL_EXIT);
  }
}
