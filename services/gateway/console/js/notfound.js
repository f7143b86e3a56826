// The page for a console address that names no page: says so, and offers
// the console's navigation and the triage queue.
import {h, replace} from './dom.js';
import {start, backTo} from './shell.js';

start((main) => replace(main, h('h1', {}, 'Page not found'),
  h('p', {class: 'msg error', role: 'alert'}, `The console has no page at ${location.pathname}.`),
  backTo('index.html', 'Triage queue')));
