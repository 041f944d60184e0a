// The console's only script. No framework and nothing evaluated: it reads a token file into the sign-in form, counts
// approval expiries down, and keeps the pending list live from the console's own event stream, whose HTML fragments
// the same-origin server rendered with everything escaped. Listeners are attached with addEventListener only.
/* global document, window, EventSource, DOMParser, fetch */
'use strict';

(function () {
  /** Reads the picked token file into the sign-in text area (the file itself is never uploaded). */
  function wireTokenFile() {
    var input = document.getElementById('token-file');
    var area = document.getElementById('token');
    if (!input || !area) return;
    input.addEventListener('change', function () {
      var file = input.files && input.files[0];
      if (!file) return;
      file.text().then(
        function (text) {
          area.value = text.trim();
          area.focus();
        },
        function () {
          area.value = '';
        },
      );
    });
  }

  function pad(n) {
    return n < 10 ? '0' + n : String(n);
  }

  /** "in 4m 05s", "in 1h 02m", "expired": the time left until an approval's expiry. */
  function remaining(ms) {
    if (ms <= 0) return 'expired';
    var seconds = Math.floor(ms / 1000);
    var hours = Math.floor(seconds / 3600);
    var minutes = Math.floor((seconds % 3600) / 60);
    if (hours > 0) return 'in ' + hours + 'h ' + pad(minutes) + 'm';
    return 'in ' + minutes + 'm ' + pad(seconds % 60) + 's';
  }

  function tick() {
    var now = Date.now();
    var times = document.querySelectorAll('time.expires[datetime]');
    for (var i = 0; i < times.length; i += 1) {
      var time = times[i];
      var at = Date.parse(time.getAttribute('datetime') || '');
      if (Number.isNaN(at)) continue;
      if (!time.title) time.title = new Date(at).toLocaleString();
      time.textContent = remaining(at - now);
      time.classList.toggle('soon', at - now < 60000);
    }
  }

  /** Replaces the section's children with the server's fragment, keeping typed reasons and focus. */
  function replacePending(section, fragment) {
    var typed = {};
    var inputs = section.querySelectorAll('input[name="reason"]');
    for (var i = 0; i < inputs.length; i += 1) if (inputs[i].id && inputs[i].value) typed[inputs[i].id] = inputs[i].value;
    var active = document.activeElement && section.contains(document.activeElement) ? document.activeElement.id : '';
    // Parsed as an inert document (DOMParser runs no script); only the server's escaped HTML ever comes here.
    var parsed = new DOMParser().parseFromString('<!doctype html><html><body>' + fragment + '</body></html>', 'text/html');
    var nodes = [];
    var children = parsed.body.childNodes;
    for (var j = 0; j < children.length; j += 1) nodes.push(document.importNode(children[j], true));
    section.replaceChildren.apply(section, nodes);
    Object.keys(typed).forEach(function (id) {
      var input = document.getElementById(id);
      if (input && section.contains(input)) input.value = typed[id];
    });
    if (active) {
      var again = document.getElementById(active);
      if (again && section.contains(again)) again.focus();
    }
    tick();
  }

  function wireLiveApprovals() {
    var section = document.getElementById('pending-approvals');
    var status = document.getElementById('live-status');
    if (!section || typeof EventSource !== 'function') return;
    var url = section.getAttribute('data-events');
    if (!url) return;
    var source;
    var setStatus = function (text) {
      if (status) status.textContent = text;
    };
    var recover = function () {
      fetch(window.location.pathname, { redirect: 'manual', credentials: 'same-origin' }).then(
        function (res) {
          if (res.type === 'opaqueredirect') window.location.assign('/sign-in');
          else connect();
        },
        function () {
          window.setTimeout(recover, 5000);
        },
      );
    };
    var connect = function () {
      source = new EventSource(url);
      source.addEventListener('open', function () {
        setStatus('live');
      });
      source.addEventListener('pending', function (event) {
        setStatus('live');
        replacePending(section, event.data);
      });
      source.addEventListener('error', function () {
        setStatus('reconnecting…');
        // The browser retries by itself unless the server refused the stream (session ended, console full). Then,
        // after a pause: back to sign-in if the page itself now redirects there, otherwise open the stream anew.
        if (source.readyState === EventSource.CLOSED) window.setTimeout(recover, 5000);
      });
    };
    connect();
    window.addEventListener('pagehide', function () {
      if (source) source.close();
    });
  }

  function start() {
    wireTokenFile();
    wireLiveApprovals();
    tick();
    window.setInterval(tick, 1000);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
