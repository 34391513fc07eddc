// A differential oracle: Lightbend Typesafe Config answers many HOCON cases in one JVM.
//
// Protocol, one case per line, UTF-8:
//   stdin:  a JSON array of document texts, highest priority first, e.g. ["a = ${b}", "b = 1"]
//   stdout: one JSON object per case, in order:
//     {"ok": <the resolved root as JSON>}  numbers are written from their Java values (Integer/Long as integers,
//                                            Double by Double.toString, Infinity and NaN bare as Python's json reads
//                                            them), not from their source text: render() would copy `-.5` or `01`
//                                            verbatim, which is not JSON
//     {"error": "<exception class>: <message>", "kind": "config"}    a ConfigException (bad input)
//     {"error": "<exception class>: <message>", "kind": "internal"}  BugOrBroken or any other Throwable
//     {"error": "<message>", "kind": "protocol"}                      the input line is not an array of strings
// Each document is parsed with ConfigFactory.parseString(text, defaults().setAllowMissing(true)), the documents
// are merged with withFallback (first highest), then resolve(ConfigResolveOptions.noSystem()): no environment.
// Compile with `javac -cp config-1.4.1.jar` (no other library: the tiny JSON reader and escaper are below).

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigList;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigResolveOptions;
import com.typesafe.config.ConfigValue;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

public final class LightbendOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8)));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            out.println(answer(line));
            out.flush();
        }
    }

    static String answer(String line) {
        List<String> texts;
        try {
            texts = new Reader(line).stringArray();
        } catch (IllegalArgumentException e) {
            return "{\"error\": " + quote(e.getMessage()) + ", \"kind\": \"protocol\"}";
        }
        try {
            ConfigParseOptions options = ConfigParseOptions.defaults().setAllowMissing(true);
            Config merged = ConfigFactory.empty();
            boolean first = true;
            for (String text : texts) {
                Config doc = ConfigFactory.parseString(text, options);
                merged = first ? doc : merged.withFallback(doc);
                first = false;
            }
            Config resolved = merged.resolve(ConfigResolveOptions.noSystem());
            StringBuilder b = new StringBuilder("{\"ok\": ");
            json(resolved.root(), b);
            return b.append('}').toString();
        } catch (ConfigException.BugOrBroken e) {
            return error(e, "internal");
        } catch (ConfigException e) {
            return error(e, "config");
        } catch (Throwable e) {  // NullPointerException, ClassCastException, StackOverflowError ...
            return error(e, "internal");
        }
    }

    static void json(ConfigValue value, StringBuilder b) {
        switch (value.valueType()) {
            case OBJECT: {
                b.append('{');
                boolean first = true;
                for (Map.Entry<String, ConfigValue> e : ((ConfigObject) value).entrySet()) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    b.append(quote(e.getKey())).append(':');
                    json(e.getValue(), b);
                }
                b.append('}');
                break;
            }
            case LIST: {
                b.append('[');
                boolean first = true;
                for (ConfigValue item : (ConfigList) value) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    json(item, b);
                }
                b.append(']');
                break;
            }
            case NUMBER: {
                Object n = value.unwrapped();
                if (n instanceof Double) {
                    double d = (Double) n;
                    b.append(Double.isNaN(d) ? "NaN" : Double.isInfinite(d) ? (d > 0 ? "Infinity" : "-Infinity")
                            : Double.toString(d));
                } else {
                    b.append(n.toString());  // Integer or Long
                }
                break;
            }
            case BOOLEAN:
                b.append(value.unwrapped().toString());
                break;
            case NULL:
                b.append("null");
                break;
            default:  // STRING
                b.append(quote((String) value.unwrapped()));
        }
    }

    static String error(Throwable e, String kind) {
        String message = e.getClass().getName() + ": " + e.getMessage();
        return "{\"error\": " + quote(message) + ", \"kind\": \"" + kind + "\"}";
    }

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2);
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20 || c == 0x2028 || c == 0x2029) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    /** Reads exactly one JSON array of JSON strings (the whole line). */
    static final class Reader {
        private final String s;
        private int i;

        Reader(String s) {
            this.s = s;
        }

        List<String> stringArray() {
            List<String> items = new ArrayList<>();
            skip();
            expect('[');
            skip();
            if (peek() == ']') {
                i++;
            } else {
                while (true) {
                    skip();
                    items.add(string());
                    skip();
                    char c = next();
                    if (c == ']') {
                        break;
                    }
                    if (c != ',') {
                        throw new IllegalArgumentException("expected , or ] at " + (i - 1));
                    }
                }
            }
            skip();
            if (i != s.length()) {
                throw new IllegalArgumentException("trailing text at " + i);
            }
            return items;
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = next();
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = next();
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length()) {
                            throw new IllegalArgumentException("short \\u escape");
                        }
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                        break;
                    default:
                        throw new IllegalArgumentException("bad escape \\" + e);
                }
            }
        }

        private void skip() {
            while (i < s.length() && (s.charAt(i) == ' ' || s.charAt(i) == '\t' || s.charAt(i) == '\r')) {
                i++;
            }
        }

        private char peek() {
            if (i >= s.length()) {
                throw new IllegalArgumentException("unexpected end of line");
            }
            return s.charAt(i);
        }

        private char next() {
            char c = peek();
            i++;
            return c;
        }

        private void expect(char c) {
            if (next() != c) {
                throw new IllegalArgumentException("expected " + c + " at " + (i - 1));
            }
        }
    }
}
