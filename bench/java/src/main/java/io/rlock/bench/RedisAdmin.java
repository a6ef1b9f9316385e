package io.rlock.bench;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A bare RESP connection for the bench's own housekeeping (finding leftover locks, deleting
 * its keys), so that neither contender needs the other's library for it. Outside the measured
 * loop only.
 */
final class RedisAdmin implements AutoCloseable {
  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;

  /** url: redis://[[user]:password@]host[:port][/db]. */
  RedisAdmin(String url) throws IOException {
    URI uri = URI.create(url);
    if (!"redis".equals(uri.getScheme()) || uri.getHost() == null) {
      throw new IllegalArgumentException("--url must be redis://HOST[:PORT][/DB], got " + url);
    }
    socket = new Socket(uri.getHost(), uri.getPort() == -1 ? 6379 : uri.getPort());
    in = new BufferedInputStream(socket.getInputStream());
    out = new BufferedOutputStream(socket.getOutputStream());
    String userInfo = uri.getUserInfo();
    if (userInfo != null) {
      int colon = userInfo.indexOf(':');
      if (colon < 0) {
        call("AUTH", userInfo);
      } else if (colon == 0) {
        call("AUTH", userInfo.substring(1));
      } else {
        call("AUTH", userInfo.substring(0, colon), userInfo.substring(colon + 1));
      }
    }
    String db = uri.getPath() == null ? "" : uri.getPath().replaceFirst("^/", "");
    if (!db.isEmpty()) {
      call("SELECT", db);
    }
  }

  /** How many of the keys exist. */
  long exists(List<String> keys) throws IOException {
    List<String> args = new ArrayList<>(keys.size() + 1);
    args.add("EXISTS");
    args.addAll(keys);
    return (Long) call(args.toArray(String[]::new));
  }

  /** Subscribers of a pub/sub channel (PUBSUB NUMSUB). */
  long subscribers(String channel) throws IOException {
    return (Long) ((List<?>) call("PUBSUB", "NUMSUB", channel)).get(1);
  }

  /** INFO commandstats as command name -> calls. */
  java.util.Map<String, Long> commandCalls() throws IOException {
    return Multi.parseCommandStats((String) call("INFO", "commandstats"));
  }

  void deleteMatching(String pattern) throws IOException {
    String cursor = "0";
    do {
      List<?> reply = (List<?>) call("SCAN", cursor, "MATCH", pattern, "COUNT", "1000");
      cursor = (String) reply.get(0);
      for (Object key : (List<?>) reply.get(1)) {
        call("DEL", (String) key);
      }
    } while (!cursor.equals("0"));
  }

  private Object call(String... args) throws IOException {
    StringBuilder b = new StringBuilder().append('*').append(args.length).append("\r\n");
    for (String arg : args) {
      b.append('$').append(arg.getBytes(StandardCharsets.UTF_8).length).append("\r\n")
          .append(arg).append("\r\n");
    }
    out.write(b.toString().getBytes(StandardCharsets.UTF_8));
    out.flush();
    return read();
  }

  private Object read() throws IOException {
    int type = in.read();
    String line = line();
    switch (type) {
      case '+':
        return line;
      case '-':
        throw new IOException("redis: " + line);
      case ':':
        return Long.parseLong(line);
      case '$': {
        int n = Integer.parseInt(line);
        if (n < 0) {
          return null;
        }
        String s = new String(in.readNBytes(n), StandardCharsets.UTF_8);
        line();
        return s;
      }
      case '*': {
        int n = Integer.parseInt(line);
        List<Object> items = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          items.add(read());
        }
        return items;
      }
      default:
        throw new IOException("unexpected reply type " + (char) type);
    }
  }

  private String line() throws IOException {
    StringBuilder b = new StringBuilder();
    for (int c; (c = in.read()) != '\r'; ) {
      if (c == -1) {
        throw new EOFException("redis closed the connection");
      }
      b.append((char) c);
    }
    in.read(); // '\n'
    return b.toString();
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
