// Heym inspector: numbers, durations and times in the viewer's locale and time zone.
// The server writes them as ISO 8601 / plain numbers (`<time datetime>`, `data-ms`,
// `data-num`); this file only rewrites their text. Live updates are htmx's (SSE extension).
(function () {
  'use strict';
  var whole = new Intl.NumberFormat();
  var seconds = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
  var stamp = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
  var clock = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

  function duration(ms) {
    if (ms < 1000) { return whole.format(Math.round(ms)) + ' ms'; }
    if (ms < 120000) { return seconds.format(ms / 1000) + ' s'; }
    return seconds.format(ms / 60000) + ' min';
  }

  function localise(root) {
    var i, el, value, when;
    var times = root.querySelectorAll('time[datetime]:not([data-done])');
    for (i = 0; i < times.length; i++) {
      el = times[i];
      when = new Date(el.getAttribute('datetime'));
      if (!isNaN(when.getTime())) {
        el.title = el.getAttribute('datetime');
        el.textContent = (el.getAttribute('data-fmt') === 'clock' ? clock : stamp).format(when);
      }
      el.setAttribute('data-done', '');
    }
    var spans = root.querySelectorAll('[data-ms]:not([data-done])');
    for (i = 0; i < spans.length; i++) {
      value = Number(spans[i].getAttribute('data-ms'));
      if (isFinite(value)) { spans[i].textContent = duration(value); }
      spans[i].setAttribute('data-done', '');
    }
    var numbers = root.querySelectorAll('[data-num]:not([data-done])');
    for (i = 0; i < numbers.length; i++) {
      value = Number(numbers[i].getAttribute('data-num'));
      if (isFinite(value)) { numbers[i].textContent = whole.format(value); }
      numbers[i].setAttribute('data-done', '');
    }
  }

  function all() { localise(document); }
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', all);
  } else {
    all();
  }
  // Fragments swapped in from the run's live stream.
  document.addEventListener('htmx:sseMessage', all);
  document.addEventListener('htmx:afterSettle', all);
})();
