package io.rlock;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A minimal RESP client of the tests' own, to see keys as Redis stores them (byte for byte),
 * independently of rlock. Replies: byte[] (bulk), String (status), Long, null, List, or an
 * IOException for an error reply.
 */
final class RawRedis implements AutoCloseable {
  private final Socket socket = new Socket();
  private final OutputStream out;
  private final InputStream in;

  /** Connects to a redis://host:port URL. */
  RawRedis(String url) throws IOException {
    URI uri = URI.create(url);
    socket.connect(new InetSocketAddress(uri.getHost(), uri.getPort()), 5000);
    socket.setSoTimeout(10000);
    out = socket.getOutputStream();
    in = new BufferedInputStream(socket.getInputStream());
  }

  Object command(Object... args) throws IOException {
    ByteArrayOutputStream request = new ByteArrayOutputStream();
    request.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
    for (Object arg : args) {
      byte[] bytes = arg instanceof byte[] ? (byte[]) arg
          : arg.toString().getBytes(StandardCharsets.UTF_8);
      request.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
      request.writeBytes(bytes);
      request.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
    }
    out.write(request.toByteArray());
    out.flush();
    return reply();
  }

  private Object reply() throws IOException {
    int type = in.read();
    String line = line();
    switch (type) {
      case '+':
        return line;
      case '-':
        throw new IOException(line);
      case ':':
        return Long.parseLong(line);
      case '$': {
        int n = Integer.parseInt(line);
        if (n < 0) {
          return null;
        }
        byte[] bytes = in.readNBytes(n);
        in.readNBytes(2);
        return bytes;
      }
      case '*': {
        int n = Integer.parseInt(line);
        if (n < 0) {
          return null;
        }
        List<Object> items = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          items.add(reply());
        }
        return items;
      }
      default:
        throw new IOException("unexpected reply type " + type);
    }
  }

  private String line() throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    for (int c = in.read(); c != '\r'; c = in.read()) {
      if (c < 0) {
        throw new IOException("connection closed");
      }
      bytes.write(c);
    }
    in.read(); // '\n'
    return bytes.toString(StandardCharsets.UTF_8);
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
