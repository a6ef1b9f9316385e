package io.rlock.interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** An rlock process (tests/redisson/rlock_peer.py, on the installed wheel) run by commands. */
final class Peer implements AutoCloseable {
  private final Process process;
  private final Writer in;
  private final BufferedReader out;
  private final ExecutorService reader = Executors.newSingleThreadExecutor();

  /** watchdogSeconds and pollCapSeconds: the rlock client's options (null = defaults). */
  Peer(Double watchdogSeconds, Double pollCapSeconds) throws IOException {
    this(Env.URL, watchdogSeconds, pollCapSeconds);
  }

  /** A peer on another deployment (a redis-cluster:// URL, say). */
  Peer(String url, Double watchdogSeconds, Double pollCapSeconds) throws IOException {
    List<String> command = new ArrayList<>(List.of(Env.PYTHON,
        Env.REPO.resolve("tests/redisson/rlock_peer.py").toString(), url));
    if (watchdogSeconds != null) {
      command.add(watchdogSeconds.toString());
      if (pollCapSeconds != null) {
        command.add(pollCapSeconds.toString());
      }
    }
    process = new ProcessBuilder(command)
        .redirectError(ProcessBuilder.Redirect.INHERIT)
        .start();
    in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    out = new BufferedReader(
        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  Peer() throws IOException {
    this(null, null);
  }

  /** Sends a command without waiting for its answer (for one that blocks). */
  void send(String command) throws IOException {
    in.write(command + "\n");
    in.flush();
  }

  /** The answer to the last command sent. */
  String answer() throws Exception {
    Future<String> line = reader.submit(out::readLine);
    String answer = line.get(60, TimeUnit.SECONDS);
    if (answer == null) {
      throw new IllegalStateException("the rlock peer exited (code " + process.waitFor() + ")");
    }
    return answer;
  }

  String ask(String command) throws Exception {
    send(command);
    return answer();
  }

  // Throws no InterruptedException (javac -Xlint:try): an interrupt while waiting for the peer
  // kills it and stays set on the thread.
  @Override
  public void close() throws IOException {
    try {
      if (process.isAlive()) {
        send("quit");
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    } finally {
      reader.shutdownNow();
    }
  }
}
