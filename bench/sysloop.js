// bench/sysloop.js - a JScript loop for Wine's cscript: every step runs in
// system DLLs (jscript, oleaut32, ...), so entry stacks captured there are
// made of their frames (bench/run.py stacks).
var s = 0;
for (var i = 0; i < 3000; i++) {
    s += Math.sqrt(i) + ("x" + i).length;
}
WScript.Echo(s);
